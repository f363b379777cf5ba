"""A graceful exit loses nothing: N spans emitted, N spans in the file.

The job emits spans as fast as Python allows -- far faster than the file
exporter's thread can encode them -- with the shipped defaults (no tuning, no
environment overrides). The file exporter's queue makes the job wait for the
writer instead of dropping (see ``nemo.lens._sdk.batching``), and shutdown
drains the queue, so every span arrives, exactly once, on one valid line.
Checked for an explicit ``shutdown()`` and for the exit hook alone (the job
never calls shutdown), and, in the ``slow`` case, for one million spans.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.reliability.conftest import SLOW_ENABLED, read_spans, run_job

_EMIT = """
from nemo.lens import NemoLensConfig, managed_span, setup_telemetry

spans, how = int(sys.argv[1]), sys.argv[2]
handle = setup_telemetry(NemoLensConfig.from_env())
started = time.monotonic()
for i in range(spans):
    with managed_span("step", "train.step", iteration=i):
        pass
loop_s = time.monotonic() - started
before = time.monotonic()
finished = handle.shutdown() if how == "shutdown" else None
report(loop_s=loop_s, shutdown_s=time.monotonic() - before, finished=finished,
       cpu_s=time.process_time())
"""


def _file_env(path: Path) -> dict[str, str]:
    return {
        "NEMO_LENS_ENABLED": "1",
        "NEMO_LENS_EXPORTER": "file",
        "NEMO_LENS_TRACE_FILE": str(path),
        "NEMO_LENS_SPAN_GROUPS": "per_step",
    }


@pytest.mark.parametrize(
    ("how", "queue"),
    [
        ("shutdown", None),
        ("exit-hook", None),
        # A queue 64 times smaller than the default fills within milliseconds;
        # a processor that dropped when full would lose most of the spans here.
        ("shutdown", 1024),
    ],
    ids=["shutdown", "exit-hook", "tiny-queue"],
)
def test_every_one_of_100_000_spans_arrives(tmp_path: Path, how: str, queue: int | None) -> None:
    path = tmp_path / "spans.jsonl"
    env = _file_env(path)
    if queue is not None:
        env["OTEL_BSP_MAX_QUEUE_SIZE"] = str(queue)
        env["OTEL_BSP_MAX_EXPORT_BATCH_SIZE"] = str(queue // 4)
    job = run_job(_EMIT, "100000", how, env=env)
    assert job.returncode == 0, job.stderr
    if how == "shutdown":
        assert job.result["finished"] is True
    assert job.stderr == ""  # nothing dropped, nothing failed, nothing to say

    spans = read_spans(path)
    assert len(spans) == 100_000
    assert sorted(span["attributes"]["iteration"] for span in spans) == list(range(100_000))
    assert len({span["span_id"] for span in spans}) == 100_000


@pytest.mark.slow
@pytest.mark.skipif(not SLOW_ENABLED, reason="one million spans: set NEMO_LENS_SLOW_TESTS=1")
def test_every_one_of_a_million_spans_arrives(tmp_path: Path) -> None:
    spans = 1_000_000
    path = tmp_path / "spans.jsonl"
    job = run_job(_EMIT, str(spans), "shutdown", env=_file_env(path), timeout=1200)
    assert job.returncode == 0, job.stderr
    assert job.result["finished"] is True
    assert job.stderr == ""
    print(f"1M spans: {job.result} wall {job.elapsed_s:.1f} s")  # shown with -s / -rA

    seen = bytearray(spans)
    ids: set[str] = set()
    written = 0
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            span = json.loads(line)
            if "end_time_unix_nano" not in span:
                continue  # the lifetime's header (or a span recorded while open)
            written += 1
            seen[span["attributes"]["iteration"]] = 1
            ids.add(span["span_id"])
    assert written == spans
    assert all(seen)
    assert len(ids) == spans
