"""``nemo-lens check``: each group's measured rate against the tier its schema declares.

Groups are picked from the generated classes by what the check judges (a tier,
a preset, a bucket), never by name, so the tests follow the schema.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from nemo.lens.cli._classes import span_group_classes
from nemo.lens.codegen.model import PRODUCTION_PRESET, QUIET_TIERS
from nemo.lens.groups import SpanGroup

from .conftest import Result, line, span_dict, write_lines

Run = Callable[..., Result]
STEPS = 6


def group_where(cls: Any = SpanGroup, **wanted: Any) -> str:
    """The first group of ``cls`` whose info matches ``wanted`` (fires=..., bucket=...),
    with ``default=True/False`` for membership of the production preset."""
    in_default = wanted.pop("default", None)
    for name, info in cls.GROUP_INFO.items():
        if all(getattr(info, key) == value for key, value in wanted.items()) and (
            in_default is None or (name in cls.PRESETS[PRODUCTION_PRESET]) == in_default
        ):
            return str(name)
    raise LookupError(f"no group of {cls.__name__} with {wanted}")


STEP = group_where(bucket="productive")
PER_STEP = group_where(fires="per_step", bucket="")
ONCE = group_where(fires="once", bucket="", default=True)
QUIET_DEFAULT = next(
    g
    for g in sorted(SpanGroup.PRESETS[PRODUCTION_PRESET])
    if SpanGroup.GROUP_INFO[g].fires in QUIET_TIERS and SpanGroup.GROUP_INFO[g].fires != "once"
)


def trace(path: Path, per_step: Sequence[tuple[str, int]], *, extra: Sequence[str] = ()) -> str:
    """Rank 0: STEPS steps of 10 ms, each holding ``count`` spans of each ``group`` listed;
    one span of each ``extra`` group (twice for a repeated name)."""
    lines = []
    for i in range(STEPS):
        start = i * 10
        lines.append(
            line(
                span_dict(
                    "step",
                    start_ms=start,
                    end_ms=start + 10,
                    group=STEP,
                    attributes={"iteration": i + 1},
                )
            )
        )
        for group, count in per_step:
            for k in range(count):
                lines.append(
                    line(span_dict(group, start_ms=start + k, end_ms=start + k + 1, group=group))
                )
    for group in extra:
        lines.append(line(span_dict(group, start_ms=0, end_ms=STEPS * 10, group=group)))
    return str(write_lines(path, lines))


def check(run: Run, *argv: str) -> tuple[Result, dict[str, dict[str, str]]]:
    """Run ``nemo-lens check ARGV --format csv``: the result and its rows by group."""
    result = run("check", *argv, "--format", "csv")
    table = {row["group"]: row for row in csv.DictReader(io.StringIO(result.out))}
    return result, table


def findings(table: dict[str, dict[str, str]]) -> dict[str, str]:
    """Group -> its finding, for flagged groups."""
    return {group: row["finding"] for group, row in table.items() if row["finding"]}


def test_a_trace_within_its_tiers_is_clean(run: Run, real_trace: Callable[..., Path]) -> None:
    path = str(real_trace(steps=4))
    _, seen = check(run, path, "--class", "base")
    # The per_step preset as far as the demo job instruments it: a group the schema adds
    # and the job does not emit would be "enabled, never seen", rightly.
    emitted = {group for group, row in seen.items() if row["spans"] != "0"}
    spec = sorted(SpanGroup.PRESETS["per_step"] & emitted)
    assert STEP in spec

    result, table = check(run, path, "--class", "base", "--spec", ",".join(spec))
    assert result.status == 0, result.out + result.err
    assert findings(table) == {}
    assert table[STEP]["per_iteration"] == "1.0"
    assert result.err_lines[-1] == "every group within its tier"


def test_a_group_firing_more_often_than_its_tier_allows_is_flagged(
    run: Run, tmp_path: Path
) -> None:
    path = trace(tmp_path / "t.jsonl", [(PER_STEP, 3)], extra=[ONCE])
    result, table = check(run, path, "--class", "base")
    assert result.status == 1
    assert findings(table) == {
        PER_STEP: "over its tier: 3.0 per iteration (rank 0), per_step allows 1"
    }
    assert result.err_lines[-1] == "1 group flagged"


def test_the_table_is_what_the_csv_says(run: Run, tmp_path: Path) -> None:
    path = trace(tmp_path / "t.jsonl", [(PER_STEP, 3)])
    table = run("check", path, "--class", "base")
    assert table.status == 1
    assert table.out_lines[0].split()[:3] == ["group", "fires", "default"]
    assert [line.split()[0] for line in table.out_lines[1:]] == [PER_STEP, STEP]


def test_a_once_group_twice_in_a_lifetime_is_flagged(run: Run, tmp_path: Path) -> None:
    path = trace(tmp_path / "t.jsonl", [(PER_STEP, 1)], extra=[ONCE, ONCE])
    result, table = check(run, path, "--class", "base")
    assert result.status == 1
    assert findings(table) == {ONCE: "over its tier: 2 in one process lifetime, once allows 1"}


def test_a_quiet_default_group_firing_every_iteration_breaks_the_preset_contract(
    run: Run, tmp_path: Path
) -> None:
    path = trace(tmp_path / "t.jsonl", [(QUIET_DEFAULT, 1)])
    result, table = check(run, path, "--class", "base")
    assert result.status == 1
    assert findings(table) == {
        QUIET_DEFAULT: "too frequent for default: 1.0 per iteration, default stays below 1 "
        "(quiet tiers only)"
    }


def test_an_enabled_group_never_seen_is_flagged_when_it_fires_every_iteration(
    run: Run, tmp_path: Path
) -> None:
    path = trace(tmp_path / "t.jsonl", [])
    result, table = check(run, path, "--class", "base", "--spec", f"{STEP},{PER_STEP},{ONCE}")
    assert result.status == 1
    assert findings(table) == {PER_STEP: "enabled, never seen"}
    assert table[ONCE]["spans"] == "0"
    # A once group may well not fire in a run: listed, not flagged.
    assert f"{ONCE} (once)" in result.err

    without_spec = run("check", path, "--class", "base")
    assert without_spec.status == 0, without_spec.out


@pytest.mark.bad_input("check-spec-without-class")
def test_without_class_a_consumer_class_the_trace_never_used_is_not_checked(
    run: Run, tmp_path: Path
) -> None:
    # A job on the base groups, checked with its spec and no --class (as a newcomer would):
    # the consumer classes' groups that per_step enables are not "enabled, never seen".
    base = SpanGroup.ALL_GROUPS
    spec = "per_step"
    every_step = [
        (g, 1)
        for g in sorted(SpanGroup.resolve(spec) - {STEP})
        if SpanGroup.GROUP_INFO[g].fires == "per_step"
    ]
    path = trace(tmp_path / "t.jsonl", every_step)
    result, table = check(run, path, "--spec", spec)
    assert result.status == 0, result.out + result.err
    assert not findings(table)
    # A consumer class one of whose own groups the trace holds is checked in full, as is
    # one named with --class.
    name, cls = next(
        (name, cls)
        for name, cls in span_group_classes().items()
        if any(cls.GROUP_INFO[g].fires == "per_step" for g in cls.resolve(spec) - base)
    )
    own_per_step = sorted(
        g for g in cls.resolve(spec) - base if cls.GROUP_INFO[g].fires == "per_step"
    )
    named, table = check(run, path, "--class", name, "--spec", spec)
    assert named.status == 1
    assert set(own_per_step) <= {
        g for g, f in findings(table).items() if f == "enabled, never seen"
    }
    seen_once = trace(tmp_path / "own.jsonl", [], extra=sorted(cls.ALL_GROUPS - base)[:1])
    used, table = check(run, seen_once, "--spec", spec)
    assert used.status == 1
    assert set(own_per_step) <= {
        g for g, f in findings(table).items() if f == "enabled, never seen"
    }


def test_frequent_tiers_have_no_bound_per_iteration(run: Run, tmp_path: Path) -> None:
    classes = span_group_classes()
    name, cls = next(
        (name, cls)
        for name, cls in classes.items()
        if any(info.fires == "per_microbatch" for info in cls.GROUP_INFO.values())
    )
    busy = group_where(cls, fires="per_microbatch")
    path = trace(tmp_path / "t.jsonl", [(busy, 8)])
    result, table = check(run, path, "--class", name)
    assert result.status == 0, result.out
    assert (table[busy]["fires"], table[busy]["per_iteration"]) == ("per_microbatch", "8.0")


def test_bad_usage_and_bad_input(run: Run, tmp_path: Path) -> None:
    path = trace(tmp_path / "t.jsonl", [])
    bad_spec = run("check", path, "--spec", "per_stpe")
    assert bad_spec.status == 2
    assert "per_stpe" in bad_spec.err

    missing = run("check", str(tmp_path / "missing.jsonl"))
    assert missing.status == 1
    assert "missing.jsonl" in missing.err


@pytest.mark.parametrize("flag", ["--class", "--spec"])
def test_options_need_a_value(run: Run, tmp_path: Path, flag: str) -> None:
    assert run("check", trace(tmp_path / "t.jsonl", []), flag).status == 2
