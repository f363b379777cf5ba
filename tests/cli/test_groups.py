"""``nemo-lens groups``: the vocabulary, the presets, and what a spec turns on or off."""

from __future__ import annotations

import pkgutil
from collections.abc import Callable
from typing import ClassVar

import pytest

from nemo.lens import cli
from nemo.lens.cli import span_group_classes
from nemo.lens.groups import SpanGroup, SpanRegistry
from tests.fixture_vocabulary import fixture_classes

from .conftest import Result

Run = Callable[..., Result]


@pytest.fixture
def fixture_groups(monkeypatch: pytest.MonkeyPatch) -> dict[str, type[SpanGroup]]:
    """The fixture schema's classes, as `nemo-lens groups` would find them."""
    classes = fixture_classes()
    monkeypatch.setattr(cli._classes, "span_group_classes", lambda: dict(classes))
    return classes


@pytest.mark.usefixtures("fixture_groups")
def test_lists_the_base_groups_with_frequency_category_and_description_then_presets(
    run: Run,
) -> None:
    result = run("groups")

    assert result.status == 0
    assert result.err == ""
    # The registered namespaces (a table after the presets) depend on what this process
    # imported: checked on their own below.
    lines = result.out_lines
    table = 15
    namespaces = SpanRegistry.namespaces()
    assert lines[table - 1] == ""
    assert lines[table].split() == ["registered", "namespace", "groups"]
    assert [line.split()[0] for line in lines[table + 1 : table + 1 + len(namespaces)]] == (
        namespaces
    )
    assert lines[table + 1 + len(namespaces)] == ""
    del lines[table : table + 2 + len(namespaces)]
    assert lines == [
        "SpanGroup: The base span-group vocabulary, meaningful to every consumer.",
        "",
        "group        fires     category   description",
        "job          once      goodput    Root span of the job.",
        "checkpoint   periodic  goodput    Checkpoint save.",
        "legacy_sync  per_step  profiling  Host synchronisation points. (deprecated: "
        "Synchronisation is now part of step.)",
        "step         per_step  profiling  One training iteration, with a description long "
        "enough that the generator has to wrap it across lines.",
        "",
        "preset     groups",
        "default    job, checkpoint",
        "per_step   job, checkpoint, step",
        "goodput    job, checkpoint",
        "profiling  job, checkpoint, legacy_sync, step",
        "all        every group",
        "",
        "Choose groups per run with NEMO_LENS_SPAN_GROUPS, e.g. NEMO_LENS_SPAN_GROUPS=per_step.",
        "See what a spec enables: nemo-lens groups --spec per_step,-step",
    ]


def test_lists_a_namespace_registered_by_hand(run: Run) -> None:
    SpanRegistry.register("cli_test.lib", {"cli_test.lib.phase", "cli_test.lib.io"})
    try:
        result = run("groups")
    finally:
        SpanRegistry.unregister("cli_test.lib")
    assert result.status == 0
    row = next(line for line in result.out_lines if line.startswith("cli_test.lib "))
    assert row.split(maxsplit=1)[1] == "cli_test.lib.io, cli_test.lib.phase"
    assert any(line.startswith("nemo.lens.consumers.") for line in result.out_lines)


@pytest.mark.parametrize("name", sorted(span_group_classes()))
def test_every_shipped_class_lists_its_groups_and_presets(run: Run, name: str) -> None:
    cls = span_group_classes()[name]
    result = run("groups", "--class", name)

    assert result.status == 0
    lines = result.out_lines
    assert lines[0].startswith(f"{cls.__name__}: ")
    listed = {line.split()[0] for line in lines[3 : 3 + len(cls.ALL_GROUPS)]}
    assert listed == set(cls.ALL_GROUPS)
    for preset in cls.PRESETS:
        assert any(line.startswith(f"{preset} ") for line in lines)


def test_a_consumer_row_shows_the_frequency_and_category_from_the_schema(
    run: Run, fixture_groups: dict[str, type[SpanGroup]]
) -> None:
    serve = fixture_groups["serve"]
    result = run("groups", "--class", "serve")

    (row,) = [line for line in result.out_lines if line.startswith("request ")]
    assert row.split()[1:3] == ["per_request", "goodput"]
    assert row.endswith(serve.GROUP_INFO["request"].description)
    # A consumer's own view of a base group's category
    (row,) = [line for line in result.out_lines if line.startswith("checkpoint ")]
    assert row.split()[1:3] == ["periodic", "profiling"]


def test_consumer_classes_are_discovered_from_the_consumers_package() -> None:
    import nemo.lens.consumers as consumers

    classes = cli.span_group_classes()
    assert classes["base"] is SpanGroup
    modules = {m.name for m in pkgutil.iter_modules(consumers.__path__)} - {"__init__"}
    assert set(classes) == {"base"} | {m for m in modules if not m.startswith("_")}
    for name, cls in classes.items():
        assert issubclass(cls, SpanGroup)
        assert name == "base" or cls.__module__ == f"nemo.lens.consumers.{name}"


@pytest.mark.usefixtures("fixture_groups")
def test_spec_shows_every_group_on_or_off_and_the_entry_that_decided(run: Run) -> None:
    result = run("groups", "--spec", "per_step,-checkpoint")

    assert result.status == 0
    assert result.out_lines == [
        "SpanGroup: spec 'per_step,-checkpoint' enables 2 of 4 groups",
        "",
        "group        fires     enabled  decided by",
        "job          once      on       per_step",
        "checkpoint   periodic  off      -checkpoint",
        "legacy_sync  per_step  off      (not in the spec)",
        "step         per_step  on       per_step",
        "",
        "Use it with: NEMO_LENS_SPAN_GROUPS=per_step,-checkpoint",
    ]


@pytest.mark.usefixtures("fixture_groups")
def test_spec_credits_the_entry_that_first_added_a_group(run: Run) -> None:
    result = run("groups", "--spec", " Default , step, job")

    rows = {line.split()[0]: line.split()[2:] for line in result.out_lines[3:7]}
    assert rows["job"] == ["on", "default"]  # the later 'job' entry changed nothing
    assert rows["step"] == ["on", "step"]
    assert rows["legacy_sync"] == ["off", "(not", "in", "the", "spec)"]


@pytest.mark.usefixtures("fixture_groups")
@pytest.mark.parametrize(
    "spec",
    [pytest.param("", marks=pytest.mark.bad_input("groups-empty-spec")), " , "],
)
def test_an_empty_spec_means_default_as_an_empty_variable_does(run: Run, spec: str) -> None:
    # NEMO_LENS_SPAN_GROUPS= is unset (v0.2.0): the listing says what the variable does.
    result = run("groups", "--spec", spec)
    default = run("groups", "--spec", "default")

    assert result.status == 0
    assert result.out_lines[0] == (
        f"SpanGroup: spec {spec!r} (empty: read as 'default', as when unset) enables 2 of 4 groups"
    )
    assert result.out_lines[1:-1] == default.out_lines[1:-1]


@pytest.mark.usefixtures("fixture_groups")
def test_spec_against_a_consumer_class(run: Run) -> None:
    result = run("groups", "--class", "serve", "--spec", "all,-batch")

    assert result.status == 0
    assert result.out_lines[0] == "ServeSpanGroup: spec 'all,-batch' enables 5 of 6 groups"
    (batch,) = [line for line in result.out_lines if line.startswith("batch ")]
    assert batch.split() == ["batch", "per_step", "off", "-batch"]


def test_several_classes_resolve_one_spec_against_their_union(run: Run) -> None:
    classes = span_group_classes()
    names = sorted(set(classes) - {"base"})
    own = {n: sorted(classes[n].ALL_GROUPS - SpanGroup.ALL_GROUPS) for n in names}
    spec = ",".join(own[n][0] for n in names)
    flags = [arg for n in names for arg in ("--class", n)]

    result = run("groups", *flags, "--spec", spec)

    assert result.status == 0, result.err
    title = " + ".join(classes[n].__name__ for n in names)
    assert result.out_lines[0].startswith(f"{title}: spec {spec!r} enables {len(names)} of ")
    for n in names:
        (row,) = [line for line in result.out_lines if line.startswith(f"{own[n][0]} ")]
        assert row.split()[2] == "on"


def test_one_class_rejects_another_consumers_group(run: Run) -> None:
    classes = span_group_classes()
    names = sorted(set(classes) - {"base"})
    first, other = names[0], names[1]
    foreign = sorted(classes[other].ALL_GROUPS - classes[first].ALL_GROUPS)[0]

    result = run("groups", "--class", first, "--spec", foreign)

    assert result.status == 2
    assert f"Unknown span group or preset: {foreign!r}" in result.err


@pytest.mark.usefixtures("fixture_groups")
def test_an_unknown_group_in_the_spec_is_a_usage_error_with_a_suggestion(run: Run) -> None:
    result = run("groups", "--class", "serve", "--spec", "per_step,requst")

    assert result.status == 2
    assert result.out == ""
    assert result.err_lines[0].startswith("usage: nemo-lens groups ")
    assert result.err_lines[1] == (
        "nemo-lens groups: error: --spec 'per_step,requst': unknown span group or preset "
        "'requst' for ServeSpanGroup (Unknown span group or preset: 'requst'); "
        "did you mean 'request'?"
    )
    assert result.err_lines[2] == "  valid presets: all, default, goodput, per_step, profiling"


def test_an_unknown_class_is_a_usage_error_listing_the_classes(run: Run) -> None:
    result = run("groups", "--class", "megatorn")

    assert result.status == 2
    (message,) = [line for line in result.err_lines if "error:" in line]
    # argparse quotes the choices differently across Python versions; the words are stable.
    assert message.startswith("nemo-lens groups: error: argument --class: invalid choice: ")
    for name in ("'megatorn'", *span_group_classes()):
        assert name in message


@pytest.mark.usefixtures("fixture_groups")
def test_a_renamed_group_in_the_spec_works_with_a_note(run: Run) -> None:
    result = run("groups", "--spec", "iteration")

    assert result.status == 0
    assert result.err_lines == [
        "nemo-lens: note: span group 'iteration' was renamed to 'step'; write 'step' in the spec"
    ]
    (row,) = [line for line in result.out_lines if line.startswith("step ")]
    assert row.split() == ["step", "per_step", "on", "iteration"]


@pytest.mark.usefixtures("fixture_groups")
def test_a_deprecated_group_says_so_in_the_listing(run: Run) -> None:
    result = run("groups")

    assert "Host synchronisation points. (deprecated: Synchronisation is now part" in result.out


def test_a_hand_written_subclass_without_descriptions_is_listed(
    run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Handmade(SpanGroup):
        """A 0.1.0-style subclass."""

        WARMUP = "warmup"
        ALL_GROUPS: ClassVar[frozenset[str]] = SpanGroup.ALL_GROUPS | {WARMUP}
        _PRESETS: ClassVar[dict[str, frozenset[str]]] = {"default": frozenset({WARMUP})}

    monkeypatch.setattr(cli._classes, "span_group_classes", lambda: {"base": Handmade})

    result = run("groups")

    assert result.status == 0
    (row,) = [line for line in result.out_lines if line.startswith("warmup ")]
    assert row.split() == ["warmup", "?", "profiling", "(not", "described)"]
    assert "default    warmup" in result.out_lines


def test_no_command_is_a_usage_error(run: Run) -> None:
    result = run()

    assert result.status == 2
    assert result.err_lines[-1].startswith(
        "nemo-lens: error: name a command: groups, summarize or convert"
    )


def test_version_and_help_exit_zero(run: Run) -> None:
    from nemo.lens import __version__

    assert run("--version") == Result(0, f"nemo-lens {__version__}\n", "")
    helped = run("groups", "--help")
    assert helped.status == 0
    assert "--spec SPEC" in helped.out
