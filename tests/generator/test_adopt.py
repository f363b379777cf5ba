"""``nemo-lens adopt``: the consumers' hand-written classes, adopted, generated and imported,
resolve every preset to the same set; sources it cannot read get one line and exit 2."""

from __future__ import annotations

import importlib
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from nemo.lens.cli import main
from nemo.lens.codegen.command import main as generate
from nemo.lens.groups import SpanGroup, SpanRegistry
from tests.generator.conftest import FIXTURES, REPO

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

HAND_WRITTEN = FIXTURES / "adopt"
CONSUMERS = [("megatron", "MegatronSpanGroup"), ("rl", "RLSpanGroup"), ("gym", "GymSpanGroup")]


@pytest.fixture
def import_generated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """Import a module generated under *tmp_path*; forget it (and its registration) after."""
    imported: list[str] = []
    monkeypatch.syspath_prepend(str(tmp_path))

    def load(module: str) -> ModuleType:
        imported.append(module)
        return importlib.import_module(module)

    yield load
    for module in imported:
        if module in SpanRegistry.namespaces():
            SpanRegistry.unregister(module)
        for name in [n for n in sys.modules if n == module or module.startswith(n + ".")]:
            del sys.modules[name]


def adopt_and_generate(tmp_path: Path, source: Path, package: str, *extra: str) -> Path:
    schema = tmp_path / "lens.toml"
    module = f"{package}.lens_groups"
    status = main(["adopt", str(source), "--module", module, "-o", str(schema), *extra])
    assert status == 0
    assert generate(["--schema", str(schema), "--out-root", str(tmp_path), "--no-docs"]) == 0
    assert (tmp_path / package / "lens_groups.py").is_file()
    return schema


@pytest.mark.parametrize(("consumer", "class_name"), CONSUMERS)
def test_an_adopted_class_generates_the_same_groups_and_presets(
    tmp_path: Path, import_generated: Any, consumer: str, class_name: str
) -> None:
    adopt_and_generate(tmp_path, HAND_WRITTEN / f"{consumer}.py", f"adopted_{consumer}")
    hand = getattr(
        importlib.import_module(f"tests.generator.fixtures.adopt.{consumer}"), class_name
    )
    generated = getattr(import_generated(f"adopted_{consumer}.lens_groups"), class_name)

    assert generated is not hand and issubclass(generated, SpanGroup)
    assert generated.ALL_GROUPS == hand.ALL_GROUPS
    assert generated.resolve("all") == hand.ALL_GROUPS
    for name, members in hand._PRESETS.items():
        assert generated.resolve(name) == members, name
        assert generated.PRESETS[name] == members, name
    if "GOODPUT_GROUPS" in vars(hand):
        assert generated.GOODPUT_GROUPS == hand.GOODPUT_GROUPS
    # Every hand-written constant that names a group of its own is a generated constant.
    own = {k: v for k, v in vars(hand).items() if isinstance(v, str) and k.isupper()}
    for constant, value in own.items():
        if value not in SpanGroup.ALL_GROUPS and not constant.startswith("U_"):
            assert getattr(generated, constant) == value


class _Recorder:
    """Stands in for SpanRegistry: keeps what a call site registers."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def register(self, namespace: str, groups: Any, presets: Any = None) -> None:
        self.calls.append((namespace, frozenset(groups), dict(presets or {})))


def test_a_registration_call_site_generates_its_groups_and_presets(
    tmp_path: Path, import_generated: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    schema = adopt_and_generate(tmp_path, HAND_WRITTEN / "registry.py", "adopted_registry")
    source = importlib.import_module("tests.generator.fixtures.adopt.registry")
    recorder = _Recorder()
    monkeypatch.setattr(source, "SpanRegistry", recorder)
    source.register_span_groups()
    ((namespace, groups, presets),) = recorder.calls
    generated = import_generated("adopted_registry.lens_groups").ShardToolsSpanGroup

    assert namespace == "shard_tools"
    for name, members in presets.items():
        assert generated.resolve(name) == frozenset(members), name
    # A generated class inherits the base vocabulary, and the schema says so.
    assert generated.ALL_GROUPS == SpanGroup.ALL_GROUPS | groups
    assert "its `all` holds the\n# base groups too" in schema.read_text("utf-8")


def test_descriptions_come_from_docstrings_and_comments_and_fires_is_marked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "mylib_groups.py"
    source.write_text(
        textwrap.dedent(
            '''
            from typing import ClassVar, Final
            from nemo.lens.groups import SpanGroup

            class MyLibSpanGroup(SpanGroup):
                """Span groups of mylib.

                The second paragraph stays out of the description.
                """
                SHARD_MERGE: Final = "shard_merge"  # Merging of dataset shards.
                #: Splitting of dataset shards,
                #: in two comment lines.
                SHARD_SPLIT = "shard_split"
                PREFETCH = "prefetch"
                """Prefetch of the next ``batch``."""
                ALL_GROUPS: ClassVar[frozenset[str]] = SpanGroup.ALL_GROUPS | frozenset(
                    {SHARD_MERGE, SHARD_SPLIT, PREFETCH}
                )
                _PRESETS: ClassVar[dict[str, frozenset[str]]] = {
                    "default": frozenset({SpanGroup.JOB, SpanGroup.CHECKPOINT,
                                          SpanGroup.EVALUATE, SHARD_MERGE}),
                    "per_step": SpanGroup.ALL_GROUPS - {SHARD_SPLIT} | {PREFETCH},
                    # Only the shards: ``merge`` and split,
                    # nothing else.
                    "shards": {SHARD_MERGE, SHARD_SPLIT},
                    "prefetch_only": {PREFETCH},
                }
            '''
        ),
        encoding="utf-8",
    )
    assert main(["adopt", str(source)]) == 0
    text = capsys.readouterr().out
    schema = tomllib.loads(text)
    consumer = schema["consumers"]["my_lib"]
    groups = consumer["groups"]
    assert schema["extends"] == "nemo.lens"
    assert consumer["class"] == "MyLibSpanGroup"
    assert consumer["module"] == "my_lib_lens_groups"  # a module outside any package
    assert consumer["description"] == "Span groups of mylib."
    assert groups["shard_merge"]["description"] == "Merging of dataset shards."
    assert (
        groups["shard_split"]["description"] == "Splitting of dataset shards, in two comment lines."
    )
    assert groups["prefetch"]["description"] == "Prefetch of the next `batch`."
    assert groups["shard_merge"]["fires"] == "periodic"  # in default: quiet
    assert groups["prefetch"]["fires"] == "per_step"
    fires_lines = [line for line in text.splitlines() if line.startswith("fires = ")]
    assert len(fires_lines) == 3
    assert all("# review: inferred" in line for line in fires_lines)
    # default adds to the base default; per_step adds to the base per_step.
    assert consumer["presets"]["default"] == {"groups": ["shard_merge"]}
    assert consumer["presets"]["per_step"]["groups"] == ["prefetch"]
    shards = consumer["presets"]["shards"]
    assert shards["description"] == "Only the shards: `merge` and split, nothing else."
    assert shards["groups"] == ["shard_merge", "shard_split"]
    assert consumer["presets"]["prefetch_only"]["description"] == "The prefetch_only preset."
    assert 'description = "The prefetch_only preset."  # review' in text


def test_a_class_that_registers_itself_is_adopted_as_the_class(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = write(
        tmp_path,
        """
        from nemo.lens.groups import SpanGroup, SpanRegistry
        NAMESPACE = "nemo_rl"
        class RLSpanGroup(SpanGroup):
            ROLLOUT = "rollout"
            ALL_GROUPS = SpanGroup.ALL_GROUPS | frozenset([ROLLOUT])
            _PRESETS = {"per_step": SpanGroup.ALL_GROUPS | {ROLLOUT}}
        def register_span_groups(*, allow_override=True):
            SpanRegistry.register(
                NAMESPACE,
                groups=RLSpanGroup.ALL_GROUPS,
                presets=RLSpanGroup._PRESETS,
                allow_override=allow_override,
            )
        register_span_groups()
        """,
    )
    assert main(["adopt", str(source)]) == 0
    schema = tomllib.loads(capsys.readouterr().out)
    assert schema["consumers"]["rl"]["class"] == "RLSpanGroup"
    assert schema["consumers"]["rl"]["presets"]["per_step"] == {"groups": ["rollout"]}


def test_the_module_is_read_never_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "booby_trapped.py"
    source.write_text(
        "raise SystemExit('adopt ran the module')\n"
        "from nemo.lens.groups import SpanGroup\n"
        "class TrapSpanGroup(SpanGroup):\n"
        "    TRAP = 'trap'\n"
        "    ALL_GROUPS = SpanGroup.ALL_GROUPS | frozenset([TRAP])\n",
        encoding="utf-8",
    )
    assert main(["adopt", str(source)]) == 0
    assert "[consumers.trap.groups.trap]" in capsys.readouterr().out
    assert "booby_trapped" not in sys.modules


def test_it_is_a_nemo_lens_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    assert "adopt" in capsys.readouterr().out
    assert main(["adopt", "--help"]) == 0
    helped = " ".join(capsys.readouterr().out.split())
    assert "usage: nemo-lens adopt [-h] [--class NAME]" in helped
    assert "never imported or run" in helped


def test_a_dotted_module_name_is_found_as_a_file(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(REPO)
    assert main(["adopt", "tests.generator.fixtures.adopt.gym"]) == 0
    out = capsys.readouterr().out
    assert 'module = "tests.generator.fixtures.adopt.lens_groups"' in out
    assert "[consumers.gym.presets.per_rollout]" in out


def run_bad(args: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """Run adopt on bad input: exit 2, nothing on stdout, one line on stderr; that line."""
    assert main(["adopt", *args]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "Traceback" not in captured.err
    lines = captured.err.splitlines()
    assert len(lines) == 1, captured.err
    assert lines[0].startswith("nemo-lens adopt: error: ")
    return lines[0]


def write(tmp_path: Path, text: str, name: str = "groups_module.py") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


@pytest.mark.bad_input("adopt-missing-file")
def test_a_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    line = run_bad([str(tmp_path / "nope.py")], capsys)
    assert "nope.py: no such file; name the module that holds the class" in line


@pytest.mark.bad_input("adopt-no-class")
def test_a_module_with_no_class_or_registration(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    line = run_bad([str(write(tmp_path, "class Other:\n    X = 'x'\n"))], capsys)
    assert "no SpanGroup subclass at the top level and no SpanRegistry.register(...) call" in line


@pytest.mark.bad_input("adopt-two-classes")
def test_two_classes_need_class(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = write(
        tmp_path,
        """
        from nemo.lens.groups import SpanGroup
        class ASpanGroup(SpanGroup):
            ONE = "one"
        class BSpanGroup(SpanGroup):
            TWO = "two"
        """,
    )
    line = run_bad([str(source)], capsys)
    assert "2 SpanGroup subclasses: ASpanGroup (line 3), BSpanGroup (line 5)" in line
    assert "with --class NAME" in line
    assert main(["adopt", str(source), "--class", "BSpanGroup"]) == 0
    out = capsys.readouterr().out
    assert "[consumers.b.groups.two]" in out and "groups.one]" not in out
    assert "no SpanGroup subclass 'C'" in run_bad([str(source), "--class", "C"], capsys)


@pytest.mark.bad_input("adopt-syntax-error")
def test_a_syntax_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    line = run_bad([str(write(tmp_path, "class A(SpanGroup):\n    X = = 'x'\n"))], capsys)
    assert "groups_module.py:2: not valid Python (invalid syntax)" in line


@pytest.mark.bad_input("adopt-not-static")
def test_a_value_made_at_run_time(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = write(
        tmp_path,
        """
        from nemo.lens.groups import SpanGroup
        from mylib import more_groups
        class ASpanGroup(SpanGroup):
            ONE = "one"
            ALL_GROUPS = SpanGroup.ALL_GROUPS | frozenset([ONE]) | more_groups()
        """,
    )
    line = run_bad([str(source)], capsys)
    assert "groups_module.py:6: cannot evaluate `more_groups()` without running the module" in line
    assert "write that part of lens.toml by hand" in line
    imported = write(tmp_path, source.read_text().replace("more_groups()", "EXTRA"), "b.py")
    line = run_bad([str(imported)], capsys)
    assert "b.py:6: `EXTRA` is not assigned in this module (imported, or made at run time)" in line


@pytest.mark.bad_input("adopt-dotted-group")
def test_dotted_group_names(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = write(
        tmp_path,
        """
        from nemo.lens import SpanRegistry
        _PRESETS = {"default": {"nvrx.job"}}
        SpanRegistry.register("nvrx", {"nvrx.job", "nvrx.ckpt.phases"}, _PRESETS)
        """,
    )
    line = run_bad([str(source)], capsys)
    assert (
        "groups_module.py:4: group 'nvrx.ckpt.phases' of SpanRegistry.register('nvrx') is not"
        in line
    )
    assert "keep registering this one with SpanRegistry.register" in line


def test_a_preset_name_the_schema_refuses_is_reported_at_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = write(
        tmp_path,
        """
        from nemo.lens.groups import SpanGroup
        class ASpanGroup(SpanGroup):
            ONE = "one"
            ALL_GROUPS = SpanGroup.ALL_GROUPS | {ONE}
            _PRESETS = {
                "per-step": {ONE},
            }
        """,
    )
    line = run_bad([str(source)], capsys)
    assert "groups_module.py:7: preset 'per-step' of class ASpanGroup is not lowercase" in line
    assert "try 'per_step'" in line


@pytest.mark.bad_input("adopt-output-exists")
def test_an_existing_output_is_kept_without_force(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    output = tmp_path / "lens.toml"
    output.write_text("mine\n", encoding="utf-8")
    line = run_bad([str(HAND_WRITTEN / "gym.py"), "-o", str(output)], capsys)
    assert "lens.toml exists; pass --force to replace it, or choose another file" in line
    assert output.read_text(encoding="utf-8") == "mine\n"
    assert main(["adopt", str(HAND_WRITTEN / "gym.py"), "-o", str(output), "--force"]) == 0
    assert "[consumers.gym]" in output.read_text(encoding="utf-8")
