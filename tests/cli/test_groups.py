"""``nemo-lens groups``: the vocabulary, the presets, and what a spec turns on or off."""

from __future__ import annotations

from collections.abc import Callable
from types import MappingProxyType
from typing import ClassVar

import pytest

from nemo.lens import cli
from nemo.lens.consumers.gym import GymSpanGroup
from nemo.lens.consumers.megatron import MegatronSpanGroup
from nemo.lens.consumers.rl import RLSpanGroup
from nemo.lens.groups import GroupInfo, SpanGroup

from .conftest import Result

Run = Callable[..., Result]


def test_lists_the_base_groups_with_frequency_and_description_then_the_presets(run: Run) -> None:
    result = run("groups")

    assert result.status == 0
    assert result.err == ""
    assert result.out_lines == [
        "SpanGroup: The base span-group vocabulary, meaningful to every consumer.",
        "",
        "group             fires     description",
        "job               once      Root span of the job: the whole pretrain or train run.",
        "load_checkpoint   once      Checkpoint load at start-up.",
        "model_init        once      Model construction at start-up.",
        "checkpoint        periodic  Checkpoint save.",
        "evaluate          periodic  Evaluation pass.",
        "forward_backward  per_step  Forward and backward pass of an iteration.",
        "optimizer         per_step  Optimizer step.",
        "step              per_step  Training-step boundary: one span per iteration.",
        "",
        "preset    groups",
        "default   job, checkpoint, evaluate",
        "per_step  job, load_checkpoint, model_init, checkpoint, evaluate, forward_backward, "
        "optimizer, step",
        "all       every group",
        "",
        "Choose groups per run with NEMO_LENS_SPAN_GROUPS, e.g. NEMO_LENS_SPAN_GROUPS=per_step.",
        "See what a spec enables: nemo-lens groups --spec 'per_step,-optimizer'",
    ]


@pytest.mark.parametrize(
    ("name", "cls"), [("megatron", MegatronSpanGroup), ("rl", RLSpanGroup), ("gym", GymSpanGroup)]
)
def test_a_consumer_class_lists_its_own_groups_and_presets(
    run: Run, name: str, cls: type[SpanGroup]
) -> None:
    result = run("groups", "--class", name)

    assert result.status == 0
    lines = result.out_lines
    assert lines[0].startswith(f"{cls.__name__}: ")
    listed = {line.split()[0] for line in lines[3 : 3 + len(cls.GROUP_INFO)]}
    assert listed == set(cls.ALL_GROUPS)
    for preset in cls.PRESETS:
        assert any(line.startswith(f"{preset} ") for line in lines)


def test_a_consumer_row_shows_the_frequency_from_the_schema(run: Run) -> None:
    result = run("groups", "--class", "megatron")

    (row,) = [line for line in result.out_lines if line.startswith("microbatch ")]
    assert row.split()[1] == "per_microbatch"
    assert row.endswith(MegatronSpanGroup.GROUP_INFO["microbatch"].description)


def test_consumer_classes_are_discovered_from_the_consumers_package() -> None:
    assert cli.span_group_classes() == {
        "base": SpanGroup,
        "gym": GymSpanGroup,
        "megatron": MegatronSpanGroup,
        "rl": RLSpanGroup,
    }


def test_spec_shows_every_group_on_or_off_and_the_entry_that_decided(run: Run) -> None:
    result = run("groups", "--spec", "per_step,-optimizer")

    assert result.status == 0
    assert result.out_lines == [
        "SpanGroup: spec 'per_step,-optimizer' enables 7 of 8 groups",
        "",
        "group             fires     enabled  decided by",
        "job               once      on       per_step",
        "load_checkpoint   once      on       per_step",
        "model_init        once      on       per_step",
        "checkpoint        periodic  on       per_step",
        "evaluate          periodic  on       per_step",
        "forward_backward  per_step  on       per_step",
        "optimizer         per_step  off      -optimizer",
        "step              per_step  on       per_step",
        "",
        "Use it with: NEMO_LENS_SPAN_GROUPS=per_step,-optimizer",
    ]


def test_spec_credits_the_entry_that_first_added_a_group(run: Run) -> None:
    result = run("groups", "--spec", " Default , step, job")

    rows = {line.split()[0]: line.split()[2:] for line in result.out_lines[3:11]}
    assert rows["job"] == ["on", "default"]  # the later 'job' entry changed nothing
    assert rows["step"] == ["on", "step"]
    assert rows["optimizer"] == ["off", "(not", "in", "the", "spec)"]


def test_an_empty_spec_enables_nothing(run: Run) -> None:
    result = run("groups", "--spec", "")

    assert result.status == 0
    assert result.out_lines[0] == "SpanGroup: spec '' enables 0 of 8 groups"
    assert result.out_lines[-1] == "Use it with: NEMO_LENS_SPAN_GROUPS=''"


def test_spec_against_a_consumer_class(run: Run) -> None:
    result = run("groups", "--class", "megatron", "--spec", "all,-layer")

    assert result.status == 0
    assert result.out_lines[0] == "MegatronSpanGroup: spec 'all,-layer' enables 14 of 15 groups"
    (layer,) = [line for line in result.out_lines if line.startswith("layer ")]
    assert layer.split() == ["layer", "per_layer", "off", "-layer"]


def test_an_unknown_group_in_the_spec_is_a_usage_error_with_a_suggestion(run: Run) -> None:
    result = run("groups", "--class", "megatron", "--spec", "per_step,microbath")

    assert result.status == 2
    assert result.out == ""
    assert result.err_lines[0].startswith("usage: nemo-lens groups ")
    assert result.err_lines[1] == (
        "nemo-lens groups: error: --spec 'per_step,microbath': unknown span group or preset "
        "'microbath' for MegatronSpanGroup; did you mean 'microbatch'?"
    )
    assert result.err_lines[2] == "  valid presets: all, default, per_step"


def test_an_unknown_class_is_a_usage_error_listing_the_classes(run: Run) -> None:
    result = run("groups", "--class", "megatorn")

    assert result.status == 2
    (message,) = [line for line in result.err_lines if "error:" in line]
    # argparse quotes the choices differently across Python versions; the words are stable.
    assert message.startswith("nemo-lens groups: error: argument --class: invalid choice: ")
    for name in ("'megatorn'", "base", "gym", "megatron", "rl"):
        assert name in message


class _RenamingGroups(SpanGroup):
    """Test vocabulary with a renamed group."""

    RENAMED: ClassVar = MappingProxyType({"fwd_bwd": "forward_backward"})
    GROUP_INFO: ClassVar = MappingProxyType(
        {
            **SpanGroup.GROUP_INFO,
            "forward_backward": GroupInfo(
                "forward_backward", "Forward and backward.", "per_step", "0.1.0", "renamed in 0.3"
            ),
        }
    )


def test_a_renamed_group_in_the_spec_works_with_a_note(
    run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cli, "span_group_classes", lambda: {"base": _RenamingGroups})

    result = run("groups", "--spec", "fwd_bwd")

    assert result.status == 0
    assert result.err_lines == [
        "nemo-lens: note: span group 'fwd_bwd' was renamed to 'forward_backward'; "
        "write 'forward_backward' in the spec"
    ]
    (row,) = [line for line in result.out_lines if line.startswith("forward_backward ")]
    assert row.split() == ["forward_backward", "per_step", "on", "fwd_bwd"]


def test_a_deprecated_group_says_so_in_the_listing(
    run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cli, "span_group_classes", lambda: {"base": _RenamingGroups})

    result = run("groups")

    assert "Forward and backward. (deprecated: renamed in 0.3)" in result.out


def test_no_command_is_a_usage_error(run: Run) -> None:
    result = run()

    assert result.status == 2
    assert result.err_lines[-1] == "nemo-lens: error: name a command: groups, summarize or convert"


def test_version_and_help_exit_zero(run: Run) -> None:
    from nemo.lens import __version__

    assert run("--version") == Result(0, f"nemo-lens {__version__}\n", "")
    helped = run("groups", "--help")
    assert helped.status == 0
    assert "--spec SPEC" in helped.out
