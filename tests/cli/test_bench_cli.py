"""``bench/cli.py`` runs end to end on a small trace: every command and every hand-written
baseline succeeds (a baseline that named a key the trace lacks would fail here, not on
the day someone measures), and every target gets a measured value."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

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


def test_a_goodput_baseline_that_answers_differently_is_refused(tmp_path: Path) -> None:
    sys.path.insert(0, str(ROOT))
    import subprocess

    import pytest

    from bench.cli import _same_goodput
    from tests.cli.big_traces import write_big_trace

    trace = str(write_big_trace(tmp_path / "t.jsonl", 3_000, ranks=2).path)
    shown = subprocess.run(
        [sys.executable, "-m", "nemo.lens.cli", "goodput", "--json", trace],
        capture_output=True,
        text=True,
        check=True,
    )
    # The baseline's rows (run, rank, wall ns, bucket, ns) as nemo-lens's own figures.
    rows: list[list[Any]] = []
    for line in shown.stdout.splitlines():
        run = json.loads(line)
        for rank in run["ranks"]:
            wall, productive = (round(rank[key] * 1e9) for key in ("wall_s", "productive_s"))
            rows.append([run["run_id"], rank["rank"], wall, "productive", productive])
    answer = tmp_path / "rows.json"
    answer.write_text(json.dumps(rows))
    _same_goodput(answer, trace)

    rows[0][4] -= 10_000_000  # one step of 10 ms fewer on the first rank
    answer.write_text(json.dumps(rows))
    with pytest.raises(RuntimeError, match=f"disagree on run .* rank {rows[0][1]}, productive"):
        _same_goodput(answer, trace)
