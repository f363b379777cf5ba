"""``nemo-lens sql``: a query over the trace's views, its output formats and its errors.

The straggler query is checked on a generated trace whose straggler is known
(:mod:`tests.cli.big_traces`: one rank's steps take longer from an iteration
on), and the steps view on the crash-and-resume trace whose wasted steps
:mod:`tests.cli.goodput_traces` states.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from nemo.lens.cli._classes import span_group_classes
from nemo.lens.cli._engine import query
from nemo.lens.groups import SpanGroup

from .big_traces import SLOW_STEP_MS, STEP_MS, BigTrace, write_big_trace
from .conftest import MS, Result
from .goodput_traces import crash_and_resume

DOCS = Path(__file__).resolve().parents[2] / "docs" / "sql.md"
Run = Callable[..., Result]


@pytest.fixture
def stragglers(tmp_path: Path) -> BigTrace:
    """Three ranks, 40 iterations; rank 1's steps are slow from iteration 25 on."""
    return write_big_trace(tmp_path / "t.jsonl", 3 * 121, ranks=3, straggler=1, slow_from=25)


def rows(result: Result) -> list[dict[str, str]]:
    assert result.status == 0, result.err
    return list(csv.DictReader(io.StringIO(result.out)))


def test_the_straggler_query_finds_the_slow_rank_and_its_lag(
    run: Run, stragglers: BigTrace
) -> None:
    found = rows(run("sql", query("stragglers"), str(stragglers.path), "--format", "csv"))

    assert len(found) == stragglers.iterations  # every iteration, each once
    slow = [row for row in found if int(row["iteration"]) >= stragglers.slow_from]
    assert found[: len(slow)] == slow  # the worst lag first
    lag = (SLOW_STEP_MS - STEP_MS) * MS
    for row in slow:
        assert (row["slowest_rank"], row["slowest_ns"]) == ("1", str(SLOW_STEP_MS * MS))
        assert (row["median_ns"], row["lag_ns"], row["ranks"]) == (str(STEP_MS * MS), str(lag), "3")
    for row in found[len(slow) :]:  # all as fast: the lowest rank, no lag
        assert (row["slowest_rank"], row["lag_ns"]) == ("0", "0")


def test_the_docs_straggler_query_gives_what_report_shows(run: Run, stragglers: BigTrace) -> None:
    text = DOCS.read_text(encoding="utf-8")
    section = text.split("## The straggler query", 1)[1]
    documented = re.search(r"```sql\n(.*?)```", section, re.DOTALL)
    assert documented is not None, "docs/sql.md: the straggler query's sql block"
    trace = str(stragglers.path)
    ours = run("sql", documented.group(1), trace, "--format", "csv")
    packaged = run("sql", query("stragglers"), trace, "--format", "csv")
    assert rows(ours) == rows(packaged)


def test_steps_marks_the_executions_a_crash_wasted(run: Run, tmp_path: Path) -> None:
    paths = [str(p) for p in crash_and_resume(tmp_path)]
    query = "SELECT rank, iteration, wasted FROM steps ORDER BY rank, start_ns"
    found = rows(run("sql", query, *paths, "--format", "csv"))

    # Per rank: 1-4 in the crashed lifetime, 3 and 4 again after the resume.
    expected = [("1", "false"), ("2", "false"), ("3", "true"), ("4", "true")]
    expected += [("3", "false"), ("4", "false")]
    for rank in ("0", "1"):
        mine = [(row["iteration"], row["wasted"]) for row in found if row["rank"] == rank]
        assert mine == expected


def test_formats_table_csv_and_json_lines(run: Run, stragglers: BigTrace) -> None:
    query = (
        "SELECT rank, count(*) AS steps, NULL AS nothing, 'a,b' AS text "
        "FROM steps GROUP BY rank ORDER BY rank"
    )
    trace = str(stragglers.path)
    iterations = str(stragglers.iterations)

    table = run("sql", query, trace)
    assert table.status == 0, table.err
    assert table.out_lines[0].split() == ["rank", "steps", "nothing", "text"]
    assert [line.split() for line in table.out_lines[1:]] == [
        [str(rank), iterations, "NULL", "a,b"] for rank in range(3)
    ]

    as_csv = rows(run("sql", query, trace, "--format", "csv"))
    assert as_csv[0] == {"rank": "0", "steps": iterations, "nothing": "", "text": "a,b"}

    as_json = run("sql", query, trace, "--format", "json")
    assert as_json.status == 0, as_json.err
    records = [json.loads(line) for line in as_json.out_lines]
    assert records[2] == {"rank": 2, "steps": stragglers.iterations, "nothing": None, "text": "a,b"}


def test_span_groups_holds_the_selected_classes(run: Run, stragglers: BigTrace) -> None:
    query = "SELECT span_group FROM span_groups ORDER BY span_group"
    trace = str(stragglers.path)
    for name, cls in span_group_classes().items():
        found = rows(run("sql", query, trace, "--class", name, "--format", "csv"))
        assert [row["span_group"] for row in found] == sorted(cls.GROUP_INFO)


def test_spans_carries_attributes_as_json(run: Run, stragglers: BigTrace) -> None:
    query = f"SELECT attributes FROM spans WHERE span_group = '{SpanGroup.STEP}' LIMIT 1"
    result = run("sql", query, str(stragglers.path), "--format", "json")
    assert result.status == 0, result.err
    attributes = json.loads(json.loads(result.out)["attributes"])
    assert isinstance(attributes["iteration"], int)


@pytest.mark.parametrize(
    ("query", "named"),
    [
        ("SELECT nme FROM spans", '"nme"'),
        ("SELECT * FROM spanz", "spanz"),
        ("SELEC * FROM spans", "SELEC"),
        ("SELECT count(*) FROM steps WHERE rank = 'zero'", "zero"),
    ],
)
def test_a_query_the_engine_rejects_is_a_usage_error_naming_the_problem(
    run: Run, stragglers: BigTrace, query: str, named: str
) -> None:
    result = run("sql", query, str(stragglers.path))
    assert result.status == 2
    assert result.out == ""
    first = result.err_lines[0]
    assert first.startswith("nemo-lens sql: error: the query failed: ")
    assert named in first
    assert "DESCRIBE spans" in result.err  # the hint: how to see the columns


def test_an_empty_query_and_a_missing_trace(run: Run, tmp_path: Path) -> None:
    empty = run("sql", "  ", str(tmp_path / "x.jsonl"))
    assert empty.status == 2
    assert "the query is empty" in empty.err

    missing = run("sql", "SELECT 1", str(tmp_path / "missing.jsonl"))
    assert missing.status == 1
    assert "missing.jsonl" in missing.err
