"""The same analysis on Apache Spark (local mode) over the Parquet dataset: the same figures.

The dataset is what ``nemo-lens convert --to parquet`` writes; Spark gets the
engine's views (:mod:`nemo.lens.cli._engine.spark`) and runs the very query
texts DuckDB runs. Every figure of ``summarize``, ``goodput``, ``stragglers`` and the
duration straggler query must come out the same on both. Skipped without pyspark or Java, unless
``NEMO_LENS_REQUIRE_SPARK=1`` (CI), where their absence fails.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nemo.lens.cli import main
from nemo.lens.cli._engine import connect, query

from . import arrival_traces
from .big_traces import SLOW_STEP_MS, STEP_MS, write_big_trace
from .conftest import MS
from .goodput_traces import DISRUPTED, RANK0, RANK1, crash_and_resume, disrupted_megatron_run

REQUIRED = os.environ.get("NEMO_LENS_REQUIRE_SPARK", "").strip() == "1"
QUERIES = ("summary", "goodput", "stragglers", "arrivals")
SLOW_FROM = 50


def _missing() -> str:
    if importlib.util.find_spec("pyspark") is None:
        return "pyspark is not installed (pip install pyspark; the dev extra has it)"
    java_home = os.environ.get("JAVA_HOME", "")
    if shutil.which("java") is None and not (java_home and Path(java_home, "bin", "java").exists()):
        return "no Java runtime for Spark (install Java 17, or set JAVA_HOME)"
    return ""


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    missing = _missing()
    if missing:
        if REQUIRED:
            pytest.fail(f"NEMO_LENS_REQUIRE_SPARK=1 but {missing}")
        pytest.skip(missing)
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .appName("nemo-lens-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    try:
        yield session
    finally:
        session.stop()


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Four runs in one dataset: a crash and a resume over two ranks, a Megatron rank with
    every bucket, three ranks with a straggler, and four synchronous ranks, one of them late
    at every iteration."""
    directory = tmp_path_factory.mktemp("spark")
    traces = [str(p) for p in crash_and_resume(directory)]
    traces.append(str(disrupted_megatron_run(directory / "megatron.jsonl")))
    big = write_big_trace(
        directory / "big.jsonl", 3 * 301, ranks=3, straggler=2, slow_from=SLOW_FROM
    )
    assert big.iterations == 100
    traces.append(str(big.path))
    traces.append(str(arrival_traces.write(directory / "late.jsonl", arrival_traces.late_rank)))
    out = directory / "dataset"
    assert main(["convert", *traces, "--to", "parquet", "-o", str(out)]) == 0
    return out


def _duckdb(dataset: Path) -> dict[str, list[tuple[Any, ...]]]:
    with connect([str(dataset)], detail=True) as engine:  # detail: the node
        return {name: engine.rows(query(name)) for name in QUERIES}


def _same(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """Rows in one order, floats to the nanosecond (both engines interpolate in doubles)."""
    cells = [tuple(round(v, 3) if isinstance(v, float) else v for v in row) for row in rows]
    return sorted(cells, key=repr)


def test_spark_gives_duckdbs_figures_from_the_same_queries(spark: Any, dataset: Path) -> None:
    from nemo.lens.cli._engine.spark import spark_query, spark_views

    expected = _duckdb(dataset)
    spark_views(spark, str(dataset))
    results = {name: spark_query(spark, name) for name in QUERIES}  # goodput's takes 45 s
    for name, (_, rows) in results.items():
        assert rows, f"{name}: no rows"
        assert _same(rows) == _same(expected[name]), name

    # And those figures are goodput's, not merely equal: the crashed run's ranks.
    columns, rows = results["goodput"]
    by_rank = {(r[columns.index("run_id")], r[columns.index("rank")]): r for r in rows}
    for run_id, rank, figures in (("run1", 0, RANK0), ("run1", 1, RANK1), ("run2", 0, DISRUPTED)):
        row = by_rank[(run_id, rank)]
        assert row[columns.index("productive")] == figures["productive_s"] * 10**9
        for bucket, seconds in figures["badput"].items():
            assert row[columns.index(bucket)] == seconds * 10**9, bucket
        steps = figures["steps"]
        assert row[columns.index("steps")] == steps["counted"]
        assert row[columns.index("anomalous_step_count")] == steps["anomalous"]
        assert row[columns.index("ideal_step_ns")] == steps["ideal_s"] * 10**9
        assert round(row[columns.index("step_deviation_ns")]) == steps["deviation_s"] * 10**9

    # The arrival table names the late rank of the synchronous run, and its node.
    columns, rows = results["arrivals"]
    late = {
        (r[columns.index("rank")], r[columns.index("node")])
        for r in rows
        if r[columns.index("run_id")] == "sync" and r[columns.index("pattern")] == "persistent"
    }
    assert late == {(2, "node-b")}


def test_spark_finds_the_straggler(spark: Any, dataset: Path) -> None:
    from nemo.lens.cli._engine.spark import spark_query, spark_views

    spark_views(spark, str(dataset))
    columns, rows = spark_query(spark, "stragglers")
    found = [dict(zip(columns, row, strict=True)) for row in rows]
    big = [row for row in found if row["run_id"] == "bigrun"]
    slow = [row for row in big if row["iteration"] >= SLOW_FROM]
    assert len(big) == 100 and len(slow) == 100 - SLOW_FROM + 1
    lag = (SLOW_STEP_MS - STEP_MS) * MS
    assert {(row["slowest_rank"], row["lag_ns"]) for row in slow} == {(2, lag)}
