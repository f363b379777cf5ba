"""``nemo-lens report``'s straggler table: the packaged straggler query's rows, capped.

The trace is generated with a known straggler (:mod:`tests.cli.big_traces`: one
rank's steps take longer from an iteration on); the page's table must name that
rank, and its lags must be the ones ``nemo-lens sql`` prints for the same query.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from nemo.lens.cli import _report
from nemo.lens.cli._engine import query

from .big_traces import SLOW_STEP_MS, STEP_MS, BigTrace, write_big_trace
from .conftest import MS, Result

Run = Callable[..., Result]

_ROW = re.compile(r'<tr data-iteration="(\d+)" data-process="([^"]*)" data-lag-ns="(-?\d+)">')


@pytest.fixture
def trace(tmp_path: Path) -> BigTrace:
    """Three ranks, 40 iterations; rank 2's steps are slow from iteration 31 on."""
    return write_big_trace(tmp_path / "t.jsonl", 3 * 121, ranks=3, straggler=2, slow_from=31)


def table(run: Run, trace: BigTrace) -> tuple[list[tuple[int, str, int]], str]:
    """The page's straggler rows (iteration, rank label, lag) and the section's text."""
    page = trace.path.with_suffix(".html")
    result = run("report", str(trace.path), "-o", str(page))
    assert result.status == 0, result.err
    text = page.read_text(encoding="utf-8")
    (section,) = re.findall(r'<section id="stragglers">.*?</section>', text)
    found = [(int(i), label, int(lag)) for i, label, lag in _ROW.findall(section)]
    return found, section


def query_rows(run: Run, trace: BigTrace) -> list[dict[str, str]]:
    result = run("sql", query("stragglers"), str(trace.path), "--format", "csv")
    assert result.status == 0, result.err
    return list(csv.DictReader(io.StringIO(result.out)))


def test_the_table_names_the_straggler_with_the_query_s_lag(run: Run, trace: BigTrace) -> None:
    found, section = table(run, trace)

    lagging = trace.iterations - trace.slow_from + 1  # iterations count from 1
    assert found == [
        (iteration, f"rank {trace.straggler}", (SLOW_STEP_MS - STEP_MS) * MS)
        for iteration in range(trace.slow_from, trace.iterations + 1)
    ]
    expected = [
        (int(row["iteration"]), f"rank {row['slowest_rank']}", int(row["lag_ns"]))
        for row in query_rows(run, trace)
        if int(row["lag_ns"]) > 0
    ]
    assert found == expected
    assert f"All {lagging} iterations" in section
    assert f"of {trace.iterations} that two ranks or more executed" in section


def test_the_table_keeps_the_largest_lags_and_says_so(
    run: Run, trace: BigTrace, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_report, "STRAGGLER_ROWS", 4)

    found, section = table(run, trace)

    expected = [
        (int(row["iteration"]), f"rank {row['slowest_rank']}", int(row["lag_ns"]))
        for row in query_rows(run, trace)
    ]
    assert found == expected[:4]
    lagging = trace.iterations - trace.slow_from + 1  # iterations count from 1
    assert f"The 4 (the table's most) of {lagging} iterations" in section


def test_the_terminal_names_the_worst_straggler(run: Run, trace: BigTrace) -> None:
    result = run("report", str(trace.path), "-o", str(trace.path.with_suffix(".html")))

    lagging = trace.iterations - trace.slow_from + 1  # iterations count from 1
    lag_ms = SLOW_STEP_MS - STEP_MS
    assert (
        f"stragglers: {lagging} of {trace.iterations} iterations had a rank slower than the "
        f"median; the worst, rank {trace.straggler} at iteration {trace.slow_from}, "
        f"{lag_ms:.3f} ms over the median rank"
    ) in result.out_lines


def test_no_lag_and_one_rank(run: Run, tmp_path: Path) -> None:
    even = write_big_trace(tmp_path / "even.jsonl", 3 * 31, ranks=3, slow_from=10**6)
    found, section = table(run, even)
    assert found == []
    assert f"At none of the {even.iterations} iterations" in section

    alone = write_big_trace(tmp_path / "alone.jsonl", 31, ranks=1, straggler=0)
    page = alone.path.with_suffix(".html")
    result = run("report", str(alone.path), "-o", str(page))
    assert result.status == 0, result.err
    assert 'id="stragglers"' not in page.read_text(encoding="utf-8")
    assert not any(text.startswith("stragglers:") for text in result.out_lines)
