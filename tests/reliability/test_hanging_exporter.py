"""An exporter that never returns cannot hold the job: not its loop, not shutdown, not exit.

Two kinds of hang, each in a real process: an exporter whose ``export`` and
``shutdown`` block forever (a collector that accepts and never answers, a
wedged client library), and the ``file`` exporter writing into a pipe nobody
reads (what a hung network file system looks like from user space). The file
exporter normally makes the job wait for a full queue to drain (so that no span
is lost); against a writer that makes no progress at all, that wait must end.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from nemo.lens._sdk.batching import DEFAULT_STALL_TIMEOUT_MILLIS
from nemo.lens.handle import DEFAULT_SHUTDOWN_TIMEOUT_MS
from tests.reliability.conftest import run_job

# Interpreter start-up and import time on a loaded CI machine, on top of a bound.
MARGIN_S = 3.0

_HANG = """
from opentelemetry.sdk.trace.export import SpanExporter
from nemo.lens import NemoLensConfig, managed_span, setup_telemetry

class Hang(SpanExporter):
    \"\"\"Blocks forever in export and in shutdown.\"\"\"
    def export(self, spans):
        threading.Event().wait()
    def shutdown(self):
        threading.Event().wait()

spans, timeout_ms = int(sys.argv[1]), int(sys.argv[2])
handle = setup_telemetry(
    NemoLensConfig(enabled=True, exporter="none", span_groups="all", metrics_enabled=False),
    span_exporter=Hang(),
)
started = time.monotonic()
for i in range(spans):
    with managed_span("step", "train.step", iteration=i):
        pass
loop_s = time.monotonic() - started
shutdown_s = finished = None
if timeout_ms >= 0:
    before = time.monotonic()
    finished = handle.shutdown(timeout_ms=timeout_ms)
    shutdown_s = time.monotonic() - before
report(loop_s=loop_s, shutdown_s=shutdown_s, finished=finished, ended_at=time.time())
"""


def test_shutdown_returns_within_its_timeout_and_the_process_exits() -> None:
    job = run_job(_HANG, "50000", "500")
    exited_at = time.time()
    assert job.returncode == 0, job.stderr
    result = job.result
    assert result["finished"] is False
    assert result["shutdown_s"] < 0.5 + 1.0
    # Nothing left behind keeps the process alive: the exporter's thread is stuck
    # for good, but it is a daemon, and the exit hook has nothing left to do.
    assert exited_at - result["ended_at"] < MARGIN_S
    assert "shutdown did not finish within 500 ms" in job.stderr
    assert "Traceback" not in job.stderr


def test_interpreter_exit_without_shutdown_is_bounded_by_the_exit_hook() -> None:
    job = run_job(_HANG, "50000", "-1")
    exited_at = time.time()
    assert job.returncode == 0, job.stderr
    assert exited_at - job.result["ended_at"] < DEFAULT_SHUTDOWN_TIMEOUT_MS / 1000 + MARGIN_S
    assert f"shutdown did not finish within {DEFAULT_SHUTDOWN_TIMEOUT_MS} ms" in job.stderr


_FILE_INTO_PIPE = """
from nemo.lens import NemoLensConfig, managed_span, setup_telemetry

path, spans = sys.argv[1], int(sys.argv[2])
handle = setup_telemetry(NemoLensConfig(
    enabled=True, exporter="file", trace_file=path, span_groups="all", metrics_enabled=False))
started = time.monotonic()
for i in range(spans):
    with managed_span("step", "train.step", iteration=i):
        pass
loop_s = time.monotonic() - started
before = time.monotonic()
finished = handle.shutdown(timeout_ms=1000)
report(loop_s=loop_s, shutdown_s=time.monotonic() - before, finished=finished,
       ended_at=time.time())
"""


def test_a_file_exporter_that_cannot_write_stops_blocking_the_job(tmp_path: Path) -> None:
    pipe = tmp_path / "hung.jsonl"
    os.mkfifo(pipe)
    # A reader that never reads: the writer's first 64 KB fit in the pipe, then
    # every write blocks, as on a hung file system.
    reader = os.open(pipe, os.O_RDONLY | os.O_NONBLOCK)
    try:
        job = run_job(_FILE_INTO_PIPE, str(pipe), "100000")
        exited_at = time.time()
    finally:
        os.close(reader)
    assert job.returncode == 0, job.stderr
    result = job.result
    # The loop waited for the writer once, for the stall timeout, then ran on.
    assert result["loop_s"] < 60
    assert result["finished"] is False
    assert result["shutdown_s"] < 1.0 + 1.0
    assert exited_at - result["ended_at"] < MARGIN_S
    (stalled,) = job.stderr_lines("has not finished a batch")
    assert f"in {DEFAULT_STALL_TIMEOUT_MILLIS} ms" in stalled
    assert "dropped (exporter stalled)" in job.stderr
