"""A million and ten million spans: every command a user runs, within 1 GB of memory each.

Slow: runs with ``NEMO_LENS_SLOW_TESTS=1``, as CI sets it. The traces are written
by DuckDB in the exporter's format 2 (:mod:`tests.cli.big_traces`), in seconds,
and never kept. Each command runs as a user runs it, in its own interpreter; its
peak RSS is the kernel's account of that child alone (``os.wait4``).

The million-span trace goes through every command as JSON lines, and through
``convert --to parquet``. The ten-million one is written as the Parquet dataset
directly (the 4 GB of JSON lines and their conversion would cost 100 s), and
``summarize``, ``goodput`` and ``stragglers`` read it, as docs/sql.md advises at that size.
``report`` and the Chrome conversion of ten million spans take one and nine minutes
on a 2-core machine, more than CI's budget: ``bench/cli.py --ten-million`` measures
them (docs/sql.md has the figures); here they run at a million.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from nemo.lens.groups import SpanGroup

from .big_traces import SLOW_STEP_MS, STEP_MS, BigTrace, write_big_dataset, write_big_trace

SLOW = os.environ.get("NEMO_LENS_SLOW_TESTS", "").strip() == "1"
LIMIT_MIB = 1024
slow = pytest.mark.skipif(not SLOW, reason="millions of spans: set NEMO_LENS_SLOW_TESTS=1")


def run_measured(directory: Path, *argv: str) -> tuple[str, float]:
    """Run ``nemo-lens ARGV``; return its output and its peak RSS in MiB."""
    out, err = directory / "out.txt", directory / "err.txt"
    with out.open("wb") as stdout, err.open("wb") as stderr:
        child = subprocess.Popen(
            [sys.executable, "-m", "nemo.lens.cli", *argv], stdout=stdout, stderr=stderr
        )
        _, status, usage = os.wait4(child.pid, 0)  # reaps it, with its own resource usage
    child.returncode = os.waitstatus_to_exitcode(status)
    assert child.returncode == 0, err.read_text()
    return out.read_text(encoding="utf-8"), usage.ru_maxrss / 1024  # Linux: KiB


def figures(trace: BigTrace, source: str, directory: Path) -> dict[str, float]:
    """Run summarize, goodput and stragglers on ``source``; check what each says of
    ``trace``; their peak RSS by command."""
    rss: dict[str, float] = {}
    summary, rss["summarize"] = run_measured(directory, "summarize", source)
    steps = [row.split() for row in summary.splitlines() if row.split()[:1] == [SpanGroup.STEP]]
    assert [row[1] for row in steps] == [str(trace.iterations)] * trace.ranks

    goodput, rss["goodput"] = run_measured(directory, "goodput", source, "--json")
    (run,) = [json.loads(row) for row in goodput.splitlines()]
    assert run["run_id"] == trace.run_id
    assert run["productive_s"] == pytest.approx(trace.iterations * STEP_MS / 1e3)
    slow_rank = next(r for r in run["ranks"] if r["rank"] == trace.straggler)
    slow_steps = trace.iterations - trace.slow_from + 1
    expected = (trace.iterations * STEP_MS + slow_steps * (SLOW_STEP_MS - STEP_MS)) / 1e3
    assert slow_rank["productive_s"] == pytest.approx(expected)

    # Every rank starts each step and optimizer span when the others do: no late arrival
    # (the straggler's steps are longer, not later).
    arrivals, rss["stragglers"] = run_measured(directory, "stragglers", source, "--json")
    found = [json.loads(row) for row in arrivals.splitlines()]
    assert sorted((r["span_group"], r["rank"]) for r in found) == sorted(
        (group, rank)
        for group in (SpanGroup.OPTIMIZER, SpanGroup.STEP)
        for rank in range(trace.ranks)
    )
    assert {(r["iterations"], r["times_last"], r["score"]) for r in found} == {
        (trace.iterations, 0, 1.0)
    }
    return rss


def every_command(trace: BigTrace, source: str, directory: Path) -> dict[str, float]:
    """:func:`figures`, then report and convert (Chrome) on ``source``; their peak RSS."""
    rss = figures(trace, source, directory)
    page = directory / "report.html"
    report, rss["report"] = run_measured(directory, "report", source, "-o", str(page))
    assert report.splitlines()[-1].startswith(f"wrote {page}: {trace.spans} spans")

    chrome = directory / "trace.chrome.json"
    converted, rss["convert"] = run_measured(directory, "convert", source, "-o", str(chrome))
    assert converted.splitlines()[0].startswith(f"wrote {chrome}: {trace.spans} spans")
    with chrome.open("rb") as stream:
        assert stream.read(1) == b"{"
    chrome.unlink()
    return rss


def to_parquet(trace: BigTrace, directory: Path) -> tuple[Path, float]:
    dataset = directory / "dataset"
    _, rss = run_measured(
        directory, "convert", str(trace.path), "--to", "parquet", "-o", str(dataset)
    )
    ranks = sorted(p.name for p in (dataset / f"run_id={trace.run_id}").iterdir())
    assert ranks == [f"rank={rank}" for rank in range(trace.ranks)]
    return dataset, rss


@pytest.mark.slow
@slow
def test_a_million_spans_every_command_within_a_gigabyte(tmp_path: Path) -> None:
    trace = write_big_trace(tmp_path / "million.jsonl", 1_000_000)
    rss = every_command(trace, str(trace.path), tmp_path)
    _, rss["convert --to parquet"] = to_parquet(trace, tmp_path)
    print(f"peak RSS (MiB): {rss}")
    assert max(rss.values()) < LIMIT_MIB, rss


def test_the_generated_dataset_holds_the_spans_convert_makes_of_the_generated_lines(
    tmp_path: Path,
) -> None:
    import duckdb

    from nemo.lens.cli import main

    trace = write_big_trace(tmp_path / "t.jsonl", 3 * 400, ranks=3, slow_from=50)
    converted = tmp_path / "converted"
    assert main(["convert", str(trace.path), "--to", "parquet", "-o", str(converted)]) == 0
    generated = write_big_dataset(tmp_path / "generated", 3 * 400, ranks=3, slow_from=50)
    assert (generated.spans, generated.iterations) == (trace.spans, trace.iterations)

    def rows(directory: Path) -> list[tuple[object, ...]]:
        # The figures' columns; the generator leaves attributes, events and resource empty.
        return (
            duckdb.connect()
            .execute(
                "SELECT * EXCLUDE (attributes, events, resource, source, line) FROM "
                f"read_parquet('{directory}/**/*.parquet', hive_partitioning = false) "
                "ORDER BY span_id"
            )
            .fetchall()
        )

    assert rows(generated.path) == rows(converted)
    assert {
        p.relative_to(generated.path).as_posix() for p in generated.path.rglob("*.parquet")
    } == {p.relative_to(converted).as_posix() for p in converted.rglob("*.parquet")}


@pytest.mark.slow
@slow
def test_ten_million_spans_within_a_gigabyte(tmp_path: Path) -> None:
    # Written as the dataset directly: the JSON lines (4 GB) and their conversion would
    # take 100 s of CI's budget; bench/cli.py --ten-million measures the conversion (56 s,
    # 640 MiB, docs/sql.md), test_engine.py its row-group sizing.
    # In a child: the commands' peak RSS is counted from the fork, which on Linux starts
    # from this process's own.
    dataset = tmp_path / "dataset"
    script = (
        "import dataclasses, json, sys; from pathlib import Path; sys.path.insert(0, sys.argv[1]); "
        "from tests.cli.big_traces import write_big_dataset; "
        "t = write_big_dataset(Path(sys.argv[2]), 10_000_000); "
        "print(json.dumps({**dataclasses.asdict(t), 'path': str(t.path)}))"
    )
    root = str(Path(__file__).resolve().parents[2])
    written = subprocess.run(
        [sys.executable, "-c", script, root, str(dataset)],
        capture_output=True,
        text=True,
        check=True,
    )
    fields = json.loads(written.stdout.splitlines()[-1])
    trace = BigTrace(**{**fields, "path": Path(fields["path"])})
    rss = figures(trace, str(dataset), tmp_path)
    print(f"peak RSS (MiB): {rss}")
    assert max(rss.values()) < LIMIT_MIB, rss
