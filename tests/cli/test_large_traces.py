"""A million spans: ``summarize`` and ``report`` stream them within 1 GB of memory.

Slow (about two minutes): runs with ``NEMO_LENS_SLOW_TESTS=1``, as CI sets it.
Each command runs as a user runs it, in its own interpreter; its peak RSS is the
kernel's account of that child alone (``os.wait4``).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from nemo.lens.groups import SpanGroup

from .goodput_traces import write_big_trace

SLOW = os.environ.get("NEMO_LENS_SLOW_TESTS", "").strip() == "1"
LIMIT_MIB = 1024


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


@pytest.mark.slow
@pytest.mark.skipif(not SLOW, reason="one million spans: set NEMO_LENS_SLOW_TESTS=1")
def test_a_million_spans_summarize_and_report_within_a_gigabyte(tmp_path: Path) -> None:
    trace = tmp_path / "million.jsonl"
    iterations = write_big_trace(trace, 1_000_000)

    summary, summary_rss = run_measured(tmp_path, "summarize", str(trace))
    page = tmp_path / "million.html"
    report, report_rss = run_measured(tmp_path, "report", str(trace), "-o", str(page))

    print(f"peak RSS: summarize {summary_rss:.0f} MiB, report {report_rss:.0f} MiB")
    assert summary_rss < LIMIT_MIB
    assert report_rss < LIMIT_MIB
    steps = [line.split() for line in summary.splitlines() if line.split()[:1] == [SpanGroup.STEP]]
    assert [row[1] for row in steps] == [str(iterations)] * 4  # every rank's every step
    assert report.splitlines()[-1].startswith(f"wrote {page}: 1000000 spans, the 20000 longest")
    assert "Showing the 20,000 longest of 1,000,000 spans" in page.read_text(encoding="utf-8")
