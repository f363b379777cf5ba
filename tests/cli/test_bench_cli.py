"""``bench/cli.py`` runs end to end on a small trace: every command and every hand-written
baseline succeeds (a baseline that named a key the trace lacks would fail here, not on
the day someone measures), and every target gets a measured value."""

from __future__ import annotations

import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_cli_benchmark_measures_every_command_and_target() -> None:
    sys.path.insert(0, str(ROOT))
    from bench.cli import TARGETS, describe, run

    results = run(3_000)

    assert results["spans"] > 0
    assert set(results["baselines"]) <= set(results["commands"])
    for figures in results["commands"].values():
        assert figures["seconds"] > 0 and figures["rss_peak_mib"] > 0
    measured = {t["key"]: t["value"] for t in results["targets"]}
    assert set(measured) == {t.key for t in TARGETS}
    assert all(math.isfinite(value) and value > 0 for value in measured.values())
    assert "summarize (parquet)" in describe(results)
