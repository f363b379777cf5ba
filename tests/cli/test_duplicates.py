"""A span read twice (a file concatenated or copied twice, a collector's retry) counts once in
every command and view, with a warning; a file named twice is read once."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from .conftest import Result, line, span_dict, write_lines

Run = Callable[..., Result]
DROPPED = (
    "nemo-lens: warning: dropped {} repeating a span already read (the same trace_id and "
    "span_id): each span counts once; docs/sql.md says which copy is kept"
)


def _job(tmp_path: Path, name: str = "t.jsonl") -> Path:
    """A job of 100 ms whose one step (20-30 ms) is its only productive time."""
    spans = [
        span_dict("job", group="job", start_ms=0, end_ms=100, span_id="01" * 8),
        span_dict(
            "step",
            group="step",
            start_ms=20,
            end_ms=30,
            span_id="02" * 8,
            attributes={"iteration": 1},
        ),
    ]
    return write_lines(tmp_path / name, [line(span) for span in spans])


def _goodput(result: Result) -> float:
    assert result.status == 0, result.err
    value = json.loads(result.out)["goodput"]
    assert isinstance(value, float)
    return value


@pytest.mark.bad_input("trace-duplicate-spans")
def test_a_file_concatenated_twice_counts_each_span_once(run: Run, tmp_path: Path) -> None:
    once = _job(tmp_path)
    twice = tmp_path / "twice.jsonl"
    twice.write_text(once.read_text(encoding="utf-8") * 2, encoding="utf-8")

    assert _goodput(run("goodput", "--json", str(twice))) == pytest.approx(0.1)
    summary = run("summarize", str(twice))
    assert "2 spans" in summary.out and summary.err_lines == [DROPPED.format("2 span records")]
    counted = run("sql", "SELECT count(*) AS n FROM spans", str(twice), "--format", "csv")
    assert counted.out_lines == ["n", "2"]
    assert counted.err_lines == [DROPPED.format("2 span records")]
    assert run("sql", "SELECT count(*) AS n FROM steps", str(twice)).out_lines[1].strip() == "1"


def test_a_copy_that_ends_later_cannot_inflate_goodput(run: Run, tmp_path: Path) -> None:
    trace = _job(tmp_path)
    longer = span_dict(
        "step", group="step", start_ms=20, end_ms=90, span_id="02" * 8,
        attributes={"iteration": 1},
    )  # fmt: skip
    retried = write_lines(tmp_path / "retry.jsonl", [line(longer)])
    for order in ([trace, retried], [retried, trace]):  # whichever is read first
        result = run("goodput", "--json", *map(str, order))
        assert _goodput(result) == pytest.approx(0.1)
        assert result.err_lines == [DROPPED.format("1 span record")]


def test_spans_of_other_traces_or_without_ids_are_not_duplicates(run: Run, tmp_path: Path) -> None:
    spans = [
        span_dict("a", group="job", start_ms=0, end_ms=1, span_id="01" * 8),
        span_dict("b", group="job", start_ms=0, end_ms=1, span_id="01" * 8, trace_id="cd" * 16),
        span_dict("c", group="job", start_ms=0, end_ms=1),
        span_dict("d", group="job", start_ms=0, end_ms=1),
    ]
    trace = write_lines(tmp_path / "t.jsonl", [line(span) for span in spans])
    result = run("sql", "SELECT count(*) AS n FROM spans", str(trace), "--format", "csv")
    assert (result.out_lines, result.err) == (["n", "4"], "")


@pytest.mark.bad_input("trace-named-twice")
def test_a_file_named_twice_is_read_once(run: Run, tmp_path: Path) -> None:
    trace = _job(tmp_path)
    link = tmp_path / "link.jsonl"
    link.symlink_to(trace)
    result = run("summarize", str(trace), str(link), str(trace))
    assert result.status == 0, result.err
    assert "2 spans" in result.out
    assert result.err_lines == [
        f"nemo-lens: warning: {link} is named twice (as {trace}): read once",
        f"nemo-lens: warning: {trace} is named twice: read once",
    ]


def test_parquet_and_its_json_lines_together_count_each_span_once(run: Run, tmp_path: Path) -> None:
    trace = _job(tmp_path)
    dataset = tmp_path / "dataset"
    assert run("convert", "--to", "parquet", str(trace), "-o", str(dataset)).status == 0
    copy = tmp_path / "copy"
    assert run("convert", "--to", "parquet", str(trace), "-o", str(copy)).status == 0

    for inputs in ([dataset, trace], [dataset, copy]):
        result = run("goodput", "--json", *map(str, inputs))
        assert _goodput(result) == pytest.approx(0.1)
        assert result.err_lines == [DROPPED.format("2 span records")]


def test_a_dataset_copied_whole_and_named_with_its_original_counts_each_span_once(
    run: Run, tmp_path: Path
) -> None:
    # One write's files are not checked against one another; two inputs always are, even
    # when their files name the same write (a copy of the directory).
    dataset = tmp_path / "dataset"
    assert run("convert", "--to", "parquet", str(_job(tmp_path)), "-o", str(dataset)).status == 0
    copy = tmp_path / "copy"
    shutil.copytree(dataset, copy)

    result = run("goodput", "--json", str(dataset), str(copy))
    assert _goodput(result) == pytest.approx(0.1)
    assert result.err_lines == [DROPPED.format("2 span records")]
    alone = run("goodput", "--json", str(dataset))
    assert _goodput(alone) == pytest.approx(0.1)
    assert alone.err_lines == []


def test_a_file_of_another_write_inside_a_dataset_is_checked(run: Run, tmp_path: Path) -> None:
    trace = _job(tmp_path)
    dataset, other = tmp_path / "dataset", tmp_path / "other"
    for directory in (dataset, other):
        assert run("convert", "--to", "parquet", str(trace), "-o", str(directory)).status == 0
    (written,) = other.rglob("*.parquet")
    shutil.copy(written, next(dataset.rglob("*.parquet")).with_name("extra.parquet"))

    result = run("goodput", "--json", str(dataset))
    assert _goodput(result) == pytest.approx(0.1)
    assert result.err_lines == [DROPPED.format("2 span records")]
