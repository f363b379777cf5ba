"""Consumer module and class names the generator refuses (not an identifier, a keyword, a
module that would shadow the standard library's or an installed one), and a schema that
cannot be loaded as a whole, reported alone."""

from __future__ import annotations

import ast
import contextlib
import io
import re
from pathlib import Path

import pytest

from nemo.lens.codegen.command import installed_elsewhere
from nemo.lens.codegen.command import main as generate
from nemo.lens.codegen.json_schema import CLASS_RE
from nemo.lens.codegen.rules import GENERATED_MODULE_NAMES
from nemo.lens.codegen.validate import SchemaError, load_schema
from tests.generator.conftest import SHIPPED_SCHEMA, render_fixture, run_codegen

SCHEMA = """\
schema_version = 1
extends = "nemo.lens"

[consumers.mylib]
class = "{cls}"
module = "{module}"
description = "Span groups of mylib."
"""
# Line 5 is the class, line 6 the module.


def _write(tmp_path: Path, module: str = "mylib.lens_groups", cls: str = "MyLibSpanGroup") -> Path:
    (tmp_path / "pyproject.toml").write_text("", encoding="utf-8")
    schema = tmp_path / "lens.toml"
    schema.write_text(SCHEMA.format(cls=cls, module=module), encoding="utf-8")
    return schema


def _problems(path: Path) -> list[str]:
    with pytest.raises(SchemaError) as info:
        load_schema(path, shown=path.name)
    return [str(p) for p in info.value.problems]


def _run(mp: pytest.MonkeyPatch, tmp_path: Path, *extra: str) -> tuple[int, str, str]:
    """`nemo-lens generate` in this process (so that sys.path is the test's), in *tmp_path*."""
    out, err = io.StringIO(), io.StringIO()
    mp.chdir(tmp_path)
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = generate(["--schema", "lens.toml", "--out-root", "src", *extra])
    return status, out.getvalue(), err.getvalue()


@pytest.mark.parametrize(
    ("module", "fix"),
    [
        pytest.param(
            "json", "'mylib.lens_groups'", marks=pytest.mark.bad_input("module-shadows-stdlib")
        ),
        ("os", "'mylib.lens_groups'"),
        ("json.groups", "'mylib.groups'"),
        ("typing.extras", "'mylib.extras'"),
    ],
)
def test_a_module_named_like_the_standard_librarys_is_refused(
    tmp_path: Path, module: str, fix: str
) -> None:
    schema = _write(tmp_path, module=module)
    top = module.split(".")[0]
    assert _problems(schema) == [
        f"lens.toml:6: consumers.mylib.module: module {module!r} would shadow the standard "
        f"library's {top!r} (a top-level {top} on sys.path hides it, or is hidden by it); put "
        f"it in your own package, e.g. {fix}"
    ]
    result = run_codegen("--schema", "lens.toml", "--out-root", "src", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.endswith("nothing was written.\n")
    assert not (tmp_path / "src").exists()


def test_only_the_top_level_name_can_shadow(tmp_path: Path) -> None:
    # mylib.json is mylib's own module: `import json` still finds the standard library's.
    schema = _write(tmp_path, module="mylib.json")
    assert load_schema(schema).consumers[0].module == "mylib.json"


@pytest.mark.parametrize(
    "module",
    [
        pytest.param("my-lib.groups", marks=pytest.mark.bad_input("module-not-identifier")),
        "mylib.class",
        "mylib..groups",
        "MyLib.groups",
        "mylib.groups.",
        "1lib.groups",
    ],
)
def test_a_module_that_is_not_a_dotted_identifier_is_refused(tmp_path: Path, module: str) -> None:
    assert _problems(_write(tmp_path, module=module)) == [
        f"lens.toml:6: consumers.mylib.module: module {module!r} is not a dotted Python module "
        "path (lowercase identifiers joined by dots, no Python keywords); e.g. 'mylib.lens_groups'"
    ]


@pytest.mark.parametrize(
    ("cls", "problem"),
    [
        pytest.param(
            "None",
            "is a Python keyword; name the class, e.g. 'MySpanGroup'",
            marks=pytest.mark.bad_input("class-not-identifier"),
        ),
        ("True", "is a Python keyword; name the class, e.g. 'MySpanGroup'"),
        (
            "Final",
            "is a name its generated module imports, which the class would replace; name the "
            "class for its consumer, e.g. 'FinalSpanGroup'",
        ),
        (
            "Exception",
            "is a builtin, which the class would replace; name the class for its consumer, "
            "e.g. 'ExceptionSpanGroup'",
        ),
        ("My-Groups", "is not a CamelCase Python identifier"),
    ],
)
def test_a_class_name_that_cannot_name_the_class_is_refused(
    tmp_path: Path, cls: str, problem: str
) -> None:
    assert _problems(_write(tmp_path, cls=cls)) == [
        f"lens.toml:5: consumers.mylib.class: class {cls!r} {problem}"
    ]


def test_the_names_a_generated_module_imports_are_the_refused_ones(tmp_path: Path) -> None:
    # A new import in consumer.py.j2 that a class could be named after fails here until
    # GENERATED_MODULE_NAMES lists it.
    imported: set[str] = set()
    consumers = [
        text
        for text in render_fixture("small.toml", tmp_path, None).values()
        if "\nfrom nemo.lens.groups import SpanGroup\n" in text
    ]
    assert consumers, "the fixture has no consumer module"
    for source in consumers:
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.ImportFrom):
                imported.update(alias.asname or alias.name for alias in node.names)
    classlike = {name for name in imported if CLASS_RE.fullmatch(name)}
    assert classlike, "no import of a generated module was seen"
    assert classlike - {"SpanGroup"} <= GENERATED_MODULE_NAMES


def _installed(site: Path, name: str, *, package: bool = True) -> None:
    where = site / name
    where.mkdir(parents=True)
    if package:
        (where / "__init__.py").write_text("", encoding="utf-8")


@pytest.mark.bad_input("module-shadows-installed")
def test_a_module_that_would_shadow_an_installed_one_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site"
    _installed(site, "lensfakelib")
    monkeypatch.syspath_prepend(str(site))
    project = tmp_path / "project"
    project.mkdir()
    _write(project, module="lensfakelib.lens_groups")

    for mode in ((), ("--validate",), ("--check",)):
        status, _, err = _run(monkeypatch, project, *mode)
        assert status == 2, err
        assert (
            "lens.toml:6: module 'lensfakelib.lens_groups' would shadow 'lensfakelib', "
            f"installed at {site / 'lensfakelib' / '__init__.py'} (whichever comes first on "
            "sys.path hides the other); put it in your own package, e.g. "
            "'mylib.lens_groups'\n"
        ) in err
        assert err.endswith("nothing was written.\n")
    assert not (project / "src").exists()


def test_an_installed_distribution_is_named(tmp_path: Path) -> None:
    # Jinja2 is installed wherever the generator runs: it renders the templates.
    _write(tmp_path, module="jinja2.lens_groups")
    result = run_codegen("--schema", "lens.toml", "--out-root", "src", cwd=tmp_path)
    assert result.returncode == 2
    assert re.search(r"would shadow 'jinja2', installed at \S+ by the distribution", result.stderr)


def test_the_consumers_own_package_and_its_editable_install_shadow_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write(tmp_path, module="lensfakeown.lens_groups")
    own = tmp_path / "src" / "lensfakeown"
    own.mkdir(parents=True)
    (own / "__init__.py").write_text("", encoding="utf-8")
    # The project installed in its environment (pip install -e: src on sys.path), and a
    # copy installed elsewhere (pip install .): it is the same package either way.
    monkeypatch.syspath_prepend(str(tmp_path / "src"))
    _installed(tmp_path / "site", "lensfakeown")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    assert _run(monkeypatch, tmp_path)[0] == 0
    assert (own / "lens_groups.py").is_file()


def test_a_namespace_package_takes_a_module_but_not_a_module_of_its_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site"
    _installed(site, "lensfakens", package=False)
    monkeypatch.syspath_prepend(str(site))
    assert installed_elsewhere("lensfakens", tmp_path / "src") == "namespace"
    _write(tmp_path, module="lensfakens.lens_groups")
    assert _run(monkeypatch, tmp_path)[0] == 0
    _write(tmp_path, module="lensfakens")
    status, _, err = _run(monkeypatch, tmp_path)
    assert status == 2
    assert "would shadow 'lensfakens', installed as a namespace package" in err


def test_a_module_generated_into_a_directory_on_sys_path_is_not_installed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write(tmp_path, module="lensfakeflat")
    assert _run(monkeypatch, tmp_path)[0] == 0
    monkeypatch.syspath_prepend(str(tmp_path / "src"))
    assert installed_elsewhere("lensfakeflat", tmp_path / "src") is None
    assert _run(monkeypatch, tmp_path, "--check")[0] == 0


# -- a schema that cannot be loaded as a whole ------------------------------------------------


@pytest.mark.bad_input("preset-extends-cycle")
def test_a_preset_extends_cycle_is_reported_without_its_follow_on_problems(
    tmp_path: Path,
) -> None:
    text = SHIPPED_SCHEMA.read_text(encoding="utf-8")
    # default <- per_step already; default -> per_step closes the cycle, and would make
    # every per_step group a member of default (of the base and of every consumer).
    edited = text.replace(
        'groups = ["job", "checkpoint", "evaluate"]\n',
        'groups = ["job", "checkpoint", "evaluate"]\nextends = ["per_step"]\n',
        1,
    )
    assert edited != text
    path = tmp_path / "span_groups.toml"
    path.write_text(edited, encoding="utf-8")
    [problem] = _problems(path)
    assert problem.endswith(
        "presets.default.extends: 'extends' forms a cycle: default -> per_step -> default"
    )


def test_a_consumers_own_preset_cycle_is_reported_once(tmp_path: Path) -> None:
    text = SCHEMA.format(cls="MyLibSpanGroup", module="mylib.lens_groups") + (
        '\n[consumers.mylib.presets.a]\ndescription = "a"\nextends = ["b"]\ngroups = []\n'
        '\n[consumers.mylib.presets.b]\ndescription = "b"\nextends = ["a", "default"]\n'
        "groups = []\n"
    )
    path = tmp_path / "lens.toml"
    path.write_text(text, encoding="utf-8")
    assert _problems(path) == [
        "lens.toml:11: consumers.mylib.presets.a.extends: 'extends' forms a cycle: a -> b -> a"
    ]


@pytest.mark.bad_input("schema-extends-cycle")
def test_a_schema_extends_cycle_is_reported_alone(tmp_path: Path) -> None:
    base = SHIPPED_SCHEMA.read_text(encoding="utf-8")
    # A copy of the base that extends the consumer's schema: its [groups] and [presets]
    # would each be a problem of an extending schema, were the cycle not the cause.
    (tmp_path / "base.toml").write_text(
        base.replace("schema_version = 1\n", 'schema_version = 1\nextends = "lens.toml"\n', 1),
        encoding="utf-8",
    )
    _write(tmp_path)
    schema = tmp_path / "lens.toml"
    schema.write_text(
        schema.read_text(encoding="utf-8").replace('"nemo.lens"', '"base.toml"'), encoding="utf-8"
    )
    [problem] = _problems(schema)
    assert re.fullmatch(
        r"base\.toml:\d+: extends: extends 'lens\.toml' leads back to this schema \(an "
        r"extends cycle\); extend the base schema instead",
        problem,
    )


@pytest.mark.bad_input("schema-extends-missing")
def test_a_missing_base_is_reported_at_the_line_that_names_it(tmp_path: Path) -> None:
    schema = _write(tmp_path)
    schema.write_text(
        schema.read_text(encoding="utf-8").replace('"nemo.lens"', '"nope.toml"') + "\n[groups.x]\n",
        encoding="utf-8",
    )
    assert _problems(schema) == [
        f"lens.toml:2: extends: extends 'nope.toml' names no file "
        f"({(tmp_path / 'nope.toml').as_posix()} does not exist; a path is read from this "
        "schema's directory, and 'nemo.lens' names the base vocabulary of nemo.lens)"
    ]
