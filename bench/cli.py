"""Reading traces back: ``nemo-lens summarize``, ``goodput`` and ``report``, in spans per second.

Runs in its own interpreter (``python -m bench.cli --spans N``). It writes a
trace of a training job's shape -- per rank a job span and, per iteration, a
step with forward/backward and optimizer spans inside, all with the attributes
the primitives give them -- in the ``file`` exporter's line format, to a
temporary directory. Then each command runs as a user runs it, in a fresh
interpreter (``python -m nemo.lens.cli``), and is timed from start to exit;
its peak RSS comes from the kernel's accounting of that child alone
(``os.wait4``), so each figure is the command's own. Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

__all__ = ["COMMANDS", "main", "write_trace"]

COMMANDS: Final = ("summarize", "goodput", "report")
_EPOCH: Final = 1_700_000_000_000_000_000
_RANKS: Final = 4


def write_trace(path: Path, spans: int, ranks: int = _RANKS) -> int:
    """Write about ``spans`` spans over ``ranks`` ranks to ``path``; return how many exactly."""
    from nemo.lens import semconv
    from nemo.lens.groups import SpanGroup

    per_rank = max(1, spans // ranks)
    iterations = max(0, (per_rank - 1) // 3)
    step_ns, gap_ns = 10_000_000, 4_000_000
    written = 0

    def record(name: str, group: str, rank: int, start: int, end: int, iteration: int) -> str:
        attributes: dict[str, Any] = {
            semconv.SPAN_GROUP: group,
            semconv.SPAN_CATEGORY: "goodput" if group == SpanGroup.STEP else "profiling",
        }
        if iteration:
            attributes["iteration"] = iteration
        return json.dumps(
            {
                "name": name,
                "trace_id": f"{rank + 1:032x}",
                "span_id": f"{written + 1:016x}",
                "parent_span_id": None,
                "kind": "INTERNAL",
                "start_time_unix_nano": _EPOCH + start,
                "end_time_unix_nano": _EPOCH + end,
                "status": {"code": "UNSET", "description": None},
                "attributes": attributes,
                "events": [],
                "links": [],
                "resource": {
                    semconv.SERVICE_NAME: "bench",
                    semconv.RUN_ID: "bench",
                    semconv.RANK: rank,
                    semconv.LIFETIME_ID: f"lifetime{rank}",
                },
                "scope": {"name": "nemo.lens", "version": "bench"},
            },
            separators=(",", ":"),
        )

    with path.open("w", encoding="utf-8") as stream:
        for rank in range(ranks):
            for i in range(1, iterations + 1):
                start = (i - 1) * (step_ns + gap_ns)
                stream.write(
                    record(
                        "train.forward_backward",
                        SpanGroup.FORWARD_BACKWARD,
                        rank,
                        start,
                        start + 6_000_000,
                        0,
                    )
                    + "\n"
                )
                stream.write(
                    record(
                        "train.optimizer",
                        SpanGroup.OPTIMIZER,
                        rank,
                        start + 6_000_000,
                        start + 8_000_000,
                        0,
                    )
                    + "\n"
                )
                stream.write(
                    record("train.step", SpanGroup.STEP, rank, start, start + step_ns, i) + "\n"
                )
                written += 3
            stream.write(
                record("train.job", SpanGroup.JOB, rank, 0, iterations * (step_ns + gap_ns), 0)
                + "\n"
            )
            written += 1
    return written


def _run(command: str, trace: Path, directory: Path) -> dict[str, Any]:
    argv = [sys.executable, "-m", "nemo.lens.cli", command, str(trace)]
    if command == "report":
        argv += ["-o", str(directory / "report.html")]
    started = time.perf_counter()
    child = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    elapsed = time.perf_counter() - started
    child.returncode = os.waitstatus_to_exitcode(status)
    assert child.stderr is not None
    errors = child.stderr.read().decode("utf-8", "replace")
    child.stderr.close()
    if child.returncode != 0:
        raise RuntimeError(f"nemo-lens {command} failed ({child.returncode}):\n{errors}")
    # Linux reports KiB, macOS bytes.
    peak = usage.ru_maxrss / (2**20 if sys.platform == "darwin" else 2**10)
    return {"seconds": elapsed, "cpu_s": usage.ru_utime + usage.ru_stime, "rss_peak_mib": peak}


def run(spans: int) -> dict[str, Any]:
    """Write the trace, run every command on it; the JSON-ready results."""
    with tempfile.TemporaryDirectory(prefix="nemo-lens-bench-cli-") as scratch:
        directory = Path(scratch)
        trace = directory / "trace.jsonl"
        started = time.perf_counter()
        count = write_trace(trace, spans)
        results: dict[str, Any] = {
            "spans": count,
            "trace_mib": trace.stat().st_size / 2**20,
            "write_s": time.perf_counter() - started,
            "commands": {},
        }
        for command in COMMANDS:
            figures = _run(command, trace, directory)
            figures["spans_per_s"] = count / figures["seconds"]
            results["commands"][command] = figures
        return results


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.cli")
    parser.add_argument("--spans", type=int, default=1_000_000)
    args = parser.parse_args(argv)
    print(json.dumps(run(args.spans)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
