"""The engine's bucket sweep on spans that overlap in every way: nested, crossing, sharing
a start or an end, zero-length. The sweep follows nesting in linear time and takes the
covering span that started last by a join only where spans cross; both must give the
reference implementation's figures (tests/cli/reference/goodput.py)."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from nemo.lens import semconv
from nemo.lens.cli._classes import group_rows, span_group_classes
from nemo.lens.cli._engine import connect
from nemo.lens.cli._goodput import goodput_runs, run_json

from .conftest import line, span_dict, write_lines
from .test_engine import reference


def _bucket_groups() -> dict[str, str]:
    """Bucket -> a group that feeds it (the first the shipped classes name)."""
    found: dict[str, str] = {}
    for group, category, bucket, *_ in group_rows(list(span_group_classes().values())):
        if bucket and category == "goodput":
            found.setdefault(bucket, group)
    return found


GROUPS = _bucket_groups()
STEP, CHECKPOINT = GROUPS["productive"], GROUPS["checkpoint_save"]
EVALUATION, INIT = GROUPS["evaluation"], GROUPS["initialization"]


def _span(group: str, start: int, end: int, rank: int, number: int, **attributes: Any) -> str:
    attributes[semconv.SPAN_CATEGORY] = "goodput"
    record = span_dict(
        f"s{number}",
        start_ms=start,
        end_ms=end,
        group=group,
        rank=rank,
        span_id=f"{rank:08x}{number:08x}",
        attributes=attributes,
    )
    return line(record)


def _random_trace(path: Path, seed: int) -> Path:
    """Two ranks of spans on a coarse grid (so that boundaries coincide), each rank a mix
    of nested and crossing spans of every bucket; no two spans of a rank share both their
    start and their end (the order of such a tie is the input's, which SQL does not keep)."""
    rng = random.Random(seed)
    groups = sorted(GROUPS.items())
    lines = []
    for rank in range(2):
        seen: set[tuple[int, int]] = set()
        for number in range(rng.randint(3, 14)):
            start = rng.randint(0, 30)
            end = start + rng.choice([0, 1, 2, 3, 5, 8, 13])
            if (start, end) in seen:
                continue
            seen.add((start, end))
            bucket, group = rng.choice(groups)
            extra: dict[str, Any] = {}
            if bucket == "productive":
                extra["iteration"] = rng.randint(0, 3)
            lines.append(_span(group, start, end, rank, number, **extra))
    return write_lines(path, lines)


def _figures(path: Path) -> list[dict[str, Any]]:
    with connect([str(path)]) as engine:
        return [run_json(run) for run in goodput_runs(engine)]


@pytest.mark.parametrize("seed", range(16))
def test_overlapping_spans_give_the_reference_figures(tmp_path: Path, seed: int) -> None:
    path = _random_trace(tmp_path / "t.jsonl", seed)
    _, expected = reference([path])

    assert _figures(path) == expected


def test_where_spans_cross_the_one_that_started_last_wins(tmp_path: Path) -> None:
    # A step 0-10 and a checkpoint 5-15 cross: 5-15 is the checkpoint's (it started
    # last), although after 10 only the checkpoint is open and the step is the last span
    # to start at the depth the time has there. A step inside both, 6-8, wins there;
    # then an evaluation 20-30 holding an initialization 22-25 nests as usual.
    path = write_lines(
        tmp_path / "t.jsonl",
        [
            _span(STEP, 0, 10, 0, 1, iteration=1),
            _span(CHECKPOINT, 5, 15, 0, 2),
            _span(STEP, 6, 8, 0, 3, iteration=2),
            _span(EVALUATION, 20, 30, 0, 4),
            _span(INIT, 22, 25, 0, 5),
        ],
    )

    (run,) = _figures(path)

    assert run["productive_s"] == pytest.approx((5 + 2) / 1000)
    badput = run["badput"]
    assert badput["checkpoint_save"] == pytest.approx((15 - 5 - 2) / 1000)
    assert badput["evaluation"] == pytest.approx(7 / 1000)
    assert badput["initialization"] == pytest.approx(3 / 1000)
    assert badput["unaccounted"] == pytest.approx(5 / 1000)
    assert [run] == reference([path])[1]


def test_spans_that_overlap_none_own_their_extent_beside_spans_that_do(tmp_path: Path) -> None:
    # Alone: steps 0-5, 10-12 (touching the span before it) and 30-35, an evaluation
    # 40-44. Not alone: a checkpoint 5-10 and a step 5-8 that start together (whichever
    # comes first in start order), and a step 12-20 crossing an initialization 14-25.
    path = write_lines(
        tmp_path / "t.jsonl",
        [
            _span(STEP, 0, 5, 0, 1, iteration=1),
            _span(CHECKPOINT, 5, 10, 0, 2),
            _span(STEP, 5, 8, 0, 3, iteration=2),
            _span(STEP, 10, 12, 0, 4, iteration=3),
            _span(STEP, 12, 20, 0, 5, iteration=4),
            _span(INIT, 14, 25, 0, 6),
            _span(STEP, 30, 35, 0, 7, iteration=5),
            _span(EVALUATION, 40, 44, 0, 8),
        ],
    )

    (run,) = _figures(path)

    # 0-5, 5-8 (the step started with the checkpoint, is shorter), 10-12, 12-14, 30-35.
    assert run["productive_s"] == pytest.approx((5 + 3 + 2 + 2 + 5) / 1000)
    badput = run["badput"]
    assert badput["checkpoint_save"] == pytest.approx(2 / 1000)
    assert badput["initialization"] == pytest.approx(11 / 1000)
    assert badput["evaluation"] == pytest.approx(4 / 1000)
    assert badput["unaccounted"] == pytest.approx((5 + 5) / 1000)
    assert [run] == reference([path])[1]
