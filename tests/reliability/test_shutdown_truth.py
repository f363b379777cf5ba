"""Shutdown tells the truth and never raises: what was lost is counted, said and returned.

``shutdown()`` used to return ``True`` when the exporter raised, the disk was
full or the export thread had died; ``shutdown(math.inf)`` raised
``OverflowError`` (replacing the job's own exception in a ``finally``), and a
span that ended while shutdown ran was dropped without a word. What a user
must see now: ``shutdown()`` and ``force_flush()`` return ``False`` whenever a
span was lost, one summary line says how many and why, an odd timeout is read
sensibly (never raised), and a span that ends during shutdown is exported --
or, once shutdown has finished, counted.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from nemo.lens._sdk.batching import BatchingSpanProcessor
from tests.reliability.conftest import read_spans, run_job

_ODD_TIMEOUT_JOB = """
import math
from nemo.lens import NemoLensConfig, managed_span, setup_telemetry

timeout = eval(sys.argv[1])
handle = setup_telemetry(NemoLensConfig.from_env())
try:
    with managed_span("step", "train.step"):
        raise KeyError("the job's own error")
finally:
    handle.shutdown(timeout)
"""


@pytest.mark.parametrize("timeout", ["math.inf", "1e20", "float('nan')", "-1", "'5000'"])
def test_an_odd_timeout_in_a_finally_leaves_the_jobs_exception_alone(
    tmp_path: Path, timeout: str
) -> None:
    path = tmp_path / "spans.jsonl"
    job = run_job(
        _ODD_TIMEOUT_JOB,
        timeout,
        env={
            "NEMO_LENS_ENABLED": "1",
            "NEMO_LENS_EXPORTER": "file",
            "NEMO_LENS_TRACE_FILE": str(path),
            "NEMO_LENS_SPAN_GROUPS": "all",
        },
    )
    assert job.returncode == 1
    # One traceback, the job's own; no OverflowError, no "--- Logging error ---".
    assert job.stderr.count("Traceback") == 1, job.stderr
    assert job.stderr.rstrip().endswith('KeyError: "the job\'s own error"'), job.stderr
    assert "Logging error" not in job.stderr and "OverflowError" not in job.stderr
    if timeout != "-1":  # -1 is no wait at all: the span may still be queued
        (span,) = read_spans(path)
        assert span["status"]["code"] == "ERROR"


_LOSS_JOB = """
from nemo.lens import NemoLensConfig, managed_span, setup_telemetry

handle = setup_telemetry(NemoLensConfig.from_env())
for i in range(50):
    with managed_span("step", "train.step", i=i):
        pass
flushed = handle.force_flush()
report(flushed=flushed, finished=handle.shutdown())
"""


def test_a_full_disk_makes_flush_and_shutdown_say_false() -> None:
    job = run_job(
        _LOSS_JOB,
        env={
            "NEMO_LENS_ENABLED": "1",
            "NEMO_LENS_EXPORTER": "file",
            "NEMO_LENS_TRACE_FILE": "/dev/full",  # every write: ENOSPC
            "NEMO_LENS_SPAN_GROUPS": "all",
            "NEMO_LENS_METRICS_ENABLED": "0",
        },
    )
    assert job.returncode == 0, job.stderr
    assert job.result == {"flushed": False, "finished": False}
    (warning,) = job.stderr_lines("cannot export traces to /dev/full")
    assert "No space left on device" in warning
    assert "file system full" in warning
    (summary,) = job.stderr_lines("could not deliver")
    assert summary.endswith("50 span(s) failed to export to /dev/full")
    assert len(job.stderr.splitlines()) == 2, job.stderr


class _Exporter(SpanExporter):
    """Fails the first export the way it is told to, then exports normally."""

    def __init__(self, failure: BaseException | None = None) -> None:
        self.failure = failure
        self.exported: list[ReadableSpan] = []
        self.entered = threading.Event()
        self.release = threading.Event()
        self.release.set()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.entered.set()
        self.release.wait()
        failure, self.failure = self.failure, None
        if failure is not None:
            raise failure
        self.exported.extend(spans)
        return SpanExportResult.SUCCESS


def _processor(
    exporter: SpanExporter, delay_ms: float = 10_000, queue: int = 100, batch: int = 10
) -> BatchingSpanProcessor:
    return BatchingSpanProcessor(
        exporter, max_queue_size=queue, max_export_batch_size=batch, schedule_delay_millis=delay_ms
    )


def _tracer(processor: BatchingSpanProcessor) -> TracerProvider:
    provider = TracerProvider()
    provider.add_span_processor(processor)
    return provider


@pytest.mark.parametrize(
    "failure",
    [RuntimeError("exporter bug"), SystemExit(3), KeyboardInterrupt()],
    ids=["raised", "SystemExit", "KeyboardInterrupt"],
)
def test_an_exporter_that_raises_is_counted_and_the_export_thread_lives_on(
    failure: BaseException,
) -> None:
    # SystemExit and KeyboardInterrupt used to end the export thread silently:
    # every span after them stayed queued, and shutdown() still said True.
    exporter = _Exporter(failure)
    processor = _processor(exporter)
    tracer = _tracer(processor).get_tracer("test")
    for i in range(5):
        tracer.start_span(f"lost.{i}").end()
    assert processor.force_flush(timeout_millis=5000) is True  # handed over, if not taken
    assert processor.health.lost() == {"traces": 5}
    for i in range(7):
        tracer.start_span(f"kept.{i}").end()
    assert processor.close(timeout_millis=5000) is True
    assert [span.name for span in exporter.exported] == [f"kept.{i}" for i in range(7)]
    summary = processor.health.summary()
    assert summary is not None and summary.endswith("5 span(s) failed to export to _Exporter")


def test_spans_ending_during_shutdown_are_exported_and_after_it_counted() -> None:
    exporter = _Exporter()
    exporter.release.clear()
    processor = _processor(exporter)
    tracer = _tracer(processor).get_tracer("test")
    for i in range(5):
        tracer.start_span(f"before.{i}").end()
    closing = threading.Thread(target=processor.close, kwargs={"timeout_millis": 10_000})
    closing.start()
    assert exporter.entered.wait(10)  # shutdown is draining, held inside the exporter
    for i in range(7):
        tracer.start_span(f"during.{i}").end()
    exporter.release.set()
    closing.join(10)
    assert not closing.is_alive()
    for i in range(3):
        tracer.start_span(f"after.{i}").end()
    names = [span.name for span in exporter.exported]
    assert names == [f"before.{i}" for i in range(5)] + [f"during.{i}" for i in range(7)]
    assert processor.health.lost() == {"traces": 3}
    summary = processor.health.summary()
    assert summary is not None and summary.endswith("3 span(s) dropped (ended after shutdown)")


def test_threads_still_emitting_at_shutdown_lose_no_span_uncounted() -> None:
    exporter = _Exporter()
    processor = _processor(exporter, delay_ms=5, queue=1_000_000, batch=1000)
    tracer = _tracer(processor).get_tracer("test")
    stop = threading.Event()
    ended = [0] * 4

    def emit(slot: int) -> None:
        while not stop.is_set():
            tracer.start_span("busy").end()
            ended[slot] += 1

    threads = [threading.Thread(target=emit, args=(slot,)) for slot in range(4)]
    for thread in threads:
        thread.start()
    time.sleep(0.2)
    assert processor.close(timeout_millis=10_000) is True  # it finishes despite them
    # Until the threads have ended spans after it: one each may have ended before it
    # returned and not yet counted, so one more than there are threads.
    closed_at = sum(ended)
    deadline = time.monotonic() + 60
    while sum(ended) <= closed_at + len(threads) and time.monotonic() < deadline:
        time.sleep(0.005)
    stop.set()
    for thread in threads:
        thread.join()
    # Every span that ended was exported, or counted as lost: none vanished. The
    # queue never filled: what was lost ended after shutdown's last drain.
    lost = processor.health.lost()
    assert len(exporter.exported) + lost["traces"] == sum(ended)
    assert lost["traces"] > 0  # the threads kept going after shutdown: those are counted
    summary = processor.health.summary()
    assert summary is not None and summary.endswith("span(s) dropped (ended after shutdown)")


@pytest.mark.parametrize("timeout", [float("inf"), 1e20])
def test_close_waits_as_long_as_it_takes_for_an_endless_timeout(timeout: float) -> None:
    exporter = _Exporter()
    processor = _processor(exporter)
    _tracer(processor).get_tracer("test").start_span("s").end()
    assert processor.force_flush(timeout_millis=timeout) is True
    assert processor.close(timeout_millis=timeout) is True
    assert [span.name for span in exporter.exported] == ["s"]


@pytest.mark.parametrize("timeout", [float("nan"), -1.0])
def test_close_does_not_wait_for_a_timeout_that_is_not_one(timeout: float) -> None:
    exporter = _Exporter()
    exporter.release.clear()  # the export cannot finish while close() waits
    processor = _processor(exporter)
    _tracer(processor).get_tracer("test").start_span("s").end()
    assert processor.force_flush(timeout_millis=timeout) is False
    assert processor.close(timeout_millis=timeout) is False
    exporter.release.set()
