"""A group promoted to the base keeps the consumers that still define it generating.

The scenario of a release that promotes: ``mylib``, in a repository of its own, defines a
group in its ``lens.toml`` (``extends = "nemo.lens"``); a later nemo.lens defines that group
in its base schema. Here the later nemo.lens is a copy of this checkout whose base schema
gained the group with the author's one edit, so the group's name is one the shipped schema
does not hold. After the upgrade ``nemo-lens generate`` and ``--check`` pass in mylib, with
one warning that says the local definition can go, and the base definition wins.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.generator.conftest import (
    REPO,
    add_group,
    copy_sources,
    free_group_name,
    run_codegen,
)
from tests.typing.checkers import make_checkable_copy

PROMOTED = free_group_name("data_wait")
"""The group mylib defines and the upgraded base takes in."""
OWN = free_group_name("shard_merge")
OLD = free_group_name("batch_wait")
"""An old name of mylib's, renamed to the promoted group."""
SINCE = "9.9.0"
"""The base version `add_group` gives the promoted group."""

MYLIB = """\
schema_version = 1
extends = "nemo.lens"

[consumers.mylib]
class = "MyLibSpanGroup"
module = "mylib.lens_groups"
description = "Span groups of mylib."
{categories}
[consumers.mylib.groups.{promoted}]
{body}
[consumers.mylib.groups.{own}]
description = "Merging of dataset shards."
fires = "periodic"
since = "1.0.0"

[consumers.mylib.groups.{old}]
description = "Old name of the wait."
fires = "per_step"
since = "0.9.0"
deprecated = {{ note = "Say what it waits for.", renamed_to = "{promoted}" }}

[consumers.mylib.presets.per_step]
groups = ["{own}", "{promoted}"]

[consumers.mylib.presets.waits]
description = "Only the waits."
groups = ["{promoted}"]
"""
AGREES = """\
description = "Time the step waits for its next batch."
fires = "per_step"
since = "1.0.0"
"""
DISAGREES = """\
description = "Waiting for data."
fires = "periodic"
since = "1.2.0"
category = "goodput"
bucket = "initialization"
"""
# In MYLIB, the promoted group's table is on line 9 (with no categories line).
TABLE_LINE = 9


def _mylib(body: str, categories: str = "") -> str:
    return MYLIB.format(promoted=PROMOTED, own=OWN, old=OLD, body=body, categories=categories)


def _without_the_promoted_table(text: str) -> str:
    start = text.index(f"[consumers.mylib.groups.{PROMOTED}]")
    end = text.index(f"[consumers.mylib.groups.{OWN}]")
    return text[:start] + text[end:]


@pytest.fixture(scope="module")
def upgraded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The later nemo.lens: a copy of this checkout whose base `per_step` gained PROMOTED,
    generated. Its `src` is what mylib runs the generator and its code with."""
    root = copy_sources(tmp_path_factory.mktemp("upgraded"))
    schema = root / "schema" / "span_groups.toml"
    schema.write_text(add_group(schema.read_text("utf-8"), PROMOTED), "utf-8")
    done = run_codegen(cwd=root)
    assert done.returncode == 0, done.stderr
    make_checkable_copy(root / "src")  # type checkers read this nemo.lens, not the installed one
    return root / "src"


def _repository(tmp_path: Path, schema: str) -> Path:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "mylib"\n', encoding="utf-8")
    (tmp_path / "lens.toml").write_text(schema, encoding="utf-8")
    return tmp_path


def _generate(repo: Path, src: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return run_codegen(
        "--schema",
        "lens.toml",
        "--out-root",
        "src",
        "--docs",
        "docs/span-groups.md",
        *extra,
        cwd=repo,
        src=src,
    )


def _python(code: str, repo: Path, src: Path) -> str:
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=repo,
        env={"PYTHONPATH": os.pathsep.join([str(repo / "src"), str(src)])},
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def _warning(line: int, differences: str = "") -> str:
    where = f"lens.toml:{line}: consumers.mylib.groups.{PROMOTED}"
    return (
        f"warning: {where}: group {PROMOTED!r} is a base group since {SINCE} "
        f"(SpanGroup.{PROMOTED.upper()} of nemo.lens), which MyLibSpanGroup inherits"
        + (f"; the base definition wins where the two differ: {differences}" if differences else "")
        + f"; this definition can go: delete the [consumers.mylib.groups.{PROMOTED}] table "
        f"(keep {PROMOTED!r} in the presets that list it)\n"
    )


def test_before_the_upgrade_the_group_is_the_consumers_own(tmp_path: Path) -> None:
    repo = _repository(tmp_path, _mylib(AGREES))
    done = _generate(repo, REPO / "src")
    assert (done.returncode, done.stderr) == (0, "")
    module = (repo / "src" / "mylib" / "lens_groups.py").read_text(encoding="utf-8")
    assert f'    {PROMOTED.upper()}: Final = "{PROMOTED}"' in module


def test_after_the_upgrade_generate_and_check_pass_with_one_warning(
    tmp_path: Path, upgraded: Path
) -> None:
    repo = _repository(tmp_path, _mylib(AGREES))
    done = _generate(repo, upgraded)
    assert done.returncode == 0, done.stderr
    assert done.stderr == _warning(TABLE_LINE)
    assert "wrote src/mylib/lens_groups.py" in done.stdout
    checked = _generate(repo, upgraded, "--check")
    assert (checked.returncode, checked.stderr) == (0, _warning(TABLE_LINE))
    validated = _generate(repo, upgraded, "--validate")
    assert (validated.returncode, validated.stderr) == (0, _warning(TABLE_LINE))

    # The constant is the base class's: the consumer's class does not define it again.
    module = (repo / "src" / "mylib" / "lens_groups.py").read_text(encoding="utf-8")
    assert f"{PROMOTED.upper()}: Final" not in module
    out = _python(
        f"""
from mylib.lens_groups import MyLibSpanGroup
from nemo.lens.groups import SpanGroup
name = {PROMOTED!r}
assert MyLibSpanGroup.{PROMOTED.upper()} == SpanGroup.{PROMOTED.upper()} == name
assert {PROMOTED.upper()!r} not in vars(MyLibSpanGroup)
assert name in MyLibSpanGroup.resolve("per_step")          # its presets keep it
assert MyLibSpanGroup.resolve("waits") == {{name}}
assert MyLibSpanGroup.{OLD.upper()} == name                 # its old name still leads there
assert MyLibSpanGroup.ALL_GROUPS == SpanGroup.ALL_GROUPS | {{{OWN!r}}}
print(MyLibSpanGroup.GROUP_INFO[name].since)
""",
        repo,
        upgraded,
    )
    assert out.strip() == SINCE  # the base's definition, not mylib's


def test_the_base_wins_and_removing_the_definition_changes_only_the_header(
    tmp_path: Path, upgraded: Path
) -> None:
    repo = _repository(tmp_path, _mylib(DISAGREES))
    done = _generate(repo, upgraded)
    assert done.returncode == 0, done.stderr
    assert done.stderr == _warning(
        TABLE_LINE,
        "fires is 'per_step' in the base, 'periodic' here; category is 'profiling' in the "
        f"base, 'goodput' here (to keep 'goodput', write categories = {{ {PROMOTED} = "
        '"goodput" } in [consumers.mylib]); bucket is none in the base, '
        "'initialization' here",
    )
    out = _python(
        f"""
from mylib.lens_groups import MyLibSpanGroup
info = MyLibSpanGroup.GROUP_INFO[{PROMOTED!r}]
print(info.fires, MyLibSpanGroup.categories()[{PROMOTED!r}], repr(info.bucket))
""",
        repo,
        upgraded,
    )
    assert out.split() == ["per_step", "profiling", "''"]

    generated = [repo / "src" / "mylib" / "lens_groups.py", repo / "docs" / "span-groups.md"]
    before = [path.read_text(encoding="utf-8").splitlines() for path in generated]
    schema = repo / "lens.toml"
    schema.write_text(_without_the_promoted_table(schema.read_text("utf-8")), "utf-8")
    again = _generate(repo, upgraded)
    assert (again.returncode, again.stderr) == (0, "")
    for path, old in zip(generated, before, strict=True):
        new = path.read_text(encoding="utf-8").splitlines()
        assert len(new) == len(old), path
        changed = [(a, b) for a, b in zip(old, new, strict=True) if a != b]
        assert len(changed) == 1, (path, changed)
        assert all(line.lstrip("# ").startswith("schema-sha256: ") for line in changed[0])


def test_the_categories_override_keeps_the_consumers_category(
    tmp_path: Path, upgraded: Path
) -> None:
    body = AGREES + 'category = "goodput"\n'
    categories = f'categories = {{ {PROMOTED} = "goodput" }}\n'
    repo = _repository(tmp_path, _mylib(body, categories))
    done = _generate(repo, upgraded)
    assert done.returncode == 0, done.stderr
    assert done.stderr == _warning(TABLE_LINE + 1)  # nothing differs any more
    out = _python(
        f"""
from mylib.lens_groups import MyLibSpanGroup
from nemo.lens.groups import SpanGroup
print(MyLibSpanGroup.categories()[{PROMOTED!r}], SpanGroup.categories()[{PROMOTED!r}])
""",
        repo,
        upgraded,
    )
    assert out.split() == ["goodput", "profiling"]


def test_a_consumer_left_with_no_group_of_its_own_passes_ruff_and_mypy(
    tmp_path: Path, upgraded: Path
) -> None:
    text = _mylib(AGREES)
    for name in (OWN, OLD):
        start = text.index(f"[consumers.mylib.groups.{name}]")
        text = text[:start] + text[text.index("\n\n", start) + 2 :]
    text = text.replace(f'groups = ["{OWN}", "{PROMOTED}"]', f'groups = ["{PROMOTED}"]')
    repo = _repository(tmp_path, text)
    # No --docs: the header's command then fits the line length the gates below check.
    done = run_codegen("--schema", "lens.toml", "--out-root", "src", cwd=repo, src=upgraded)
    assert done.returncode == 0, done.stderr
    module = repo / "src" / "mylib" / "lens_groups.py"
    assert "    ALL_GROUPS: ClassVar[frozenset[str]] = SpanGroup.ALL_GROUPS\n" in module.read_text(
        encoding="utf-8"
    )

    config = str(REPO / "pyproject.toml")
    for gate in (
        ("ruff", "check", "--config", config),
        ("ruff", "format", "--check", "--config", config),
    ):
        result = subprocess.run(
            [sys.executable, "-m", *gate, str(module)], capture_output=True, text=True, check=False
        )
        assert result.returncode == 0, result.stdout + result.stderr
    # mypy reads the upgraded nemo.lens, whose base class has the group (the presets name
    # it as SpanGroup's); torch is an optional extra of the runtime, as in the project.
    ini = tmp_path / "mypy.ini"
    ini.write_text("[mypy]\n[mypy-torch.*,torch]\nignore_missing_imports = True\n", "utf-8")
    result = subprocess.run(
        [
            *(sys.executable, "-m", "mypy", "--config-file", str(ini), "--strict"),
            *("--no-incremental", "--explicit-package-bases", "mylib/lens_groups.py"),
        ],
        cwd=repo / "src",
        env={**os.environ, "MYPYPATH": str(upgraded)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
