"""The processors set-up puts between nemo.lens's providers and its exporters: batching for
the ``file`` and OTLP exporters, immediate for the console and in-memory ones, the metric
reader and the log processors; their sizes, and bounded waits.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Mapping
from typing import Final

from opentelemetry.sdk._logs import LogRecordProcessor
from opentelemetry.sdk._logs.export import (
    BatchLogRecordProcessor,
    InMemoryLogRecordExporter,
    LogRecordExporter,
    SimpleLogRecordProcessor,
)
from opentelemetry.sdk.metrics.export import (
    MetricExporter,
    PeriodicExportingMetricReader,
)
from opentelemetry.sdk.trace import SpanProcessor
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.id_generator import IdGenerator

from nemo.lens._core.ids import random_span_id, random_trace_id
from nemo.lens._core.sanitize import safe_str
from nemo.lens._core.secrets import scrub
from nemo.lens._sdk.batching import BatchingSpanProcessor
from nemo.lens._sdk.exporters.guard import LogGuard, SpanGuard
from nemo.lens._sdk.exporters.health import ExportHealth
from nemo.lens._sdk.exporters.jsonl import JsonLinesSpanExporter, StdoutSink
from nemo.lens._sdk.open_spans import OpenSpanRecorder, OpenSpanTracker

__all__ = [
    "FILE_MAX_EXPORT_BATCH_SIZE",
    "FILE_MAX_QUEUE_SIZE",
    "FILE_SCHEDULE_DELAY_MILLIS",
    "OTLP_MAX_EXPORT_BATCH_SIZE",
    "OTLP_MAX_QUEUE_SIZE",
    "OTLP_SCHEDULE_DELAY_MILLIS",
    "LensIdGenerator",
    "SeedIndependentIdGenerator",
    "log_processor",
    "metric_reader_for",
    "run_bounded",
    "span_processor",
]

# The logger keeps the name users configure it by (this code's module before it moved).
_logger = logging.getLogger("nemo.lens.providers")

OTLP_MAX_QUEUE_SIZE: Final = 16384
"""Spans buffered per process before the OTLP batch processor drops (SDK default 2048)."""
OTLP_MAX_EXPORT_BATCH_SIZE: Final = 1024
"""Spans per OTLP request (SDK default 512); about 1 MB, well under gRPC's 4 MB limit."""
OTLP_SCHEDULE_DELAY_MILLIS: Final = 2000
"""Longest wait between OTLP exports when the queue is not filling (SDK default 5000)."""
FILE_MAX_QUEUE_SIZE: Final = 65536
"""Spans buffered per process by the file exporter's batch processor: over 3 s of a
sustained 20,000 spans/s (``docs/benchmarks.md``)."""
FILE_MAX_EXPORT_BATCH_SIZE: Final = 4096
"""Spans written per batch by the file exporter: one ``write`` of about 2.8 MB."""
FILE_SCHEDULE_DELAY_MILLIS: Final = 25
"""Longest wait between file writes when the queue is not filling: with the worker's poll
(20 ms), a span is in the file about 45 ms after it ends, within the 100 ms a process
killed at any moment keeps (``docs/reliability.md``)."""


class SeedIndependentIdGenerator(IdGenerator):
    """Span and trace ids that ``random.seed`` cannot touch, distinct in forked children
    (the SDK's default draws from the global :mod:`random`: ranks that all call
    ``random.seed(0)`` would emit the same ids). Set-up gives it to the tracer provider;
    pass one to a ``TracerProvider(id_generator=...)`` of your own.
    """

    # Where users import it from (upstream v0.2.0's path), for reprs and help().
    __module__ = "nemo.lens.providers"

    def generate_span_id(self) -> int:
        """Return a random non-zero 64-bit span id."""
        return random_span_id()

    def generate_trace_id(self) -> int:
        """Return a random non-zero 128-bit trace id."""
        return random_trace_id()

    def is_trace_id_random(self) -> bool:
        """All 128 bits are random (W3C ``random-trace-id`` flag)."""
        return True


LensIdGenerator: Final = SeedIndependentIdGenerator
"""The generator's earlier name, kept importable."""


def run_bounded(tasks: Mapping[str, Callable[[], object]], timeout_s: float) -> list[str]:
    """Run each task in its own daemon thread; wait at most *timeout_s* in total. Returns the
    names of the tasks still running at the deadline; a task's exception is logged."""

    def run(name: str, task: Callable[[], object]) -> None:
        try:
            task()
        except Exception as exc:
            # One line: the SDK's provider shutdowns raise when their deadline has passed,
            # which a short timeout makes routine.
            _logger.warning("nemo.lens: %s failed: %s", name, scrub(safe_str(exc)))
            _logger.debug("nemo.lens: %s failed", name, exc_info=True)

    threads = {
        name: threading.Thread(target=run, args=(name, task), name=f"nemo.lens {name}", daemon=True)
        for name, task in tasks.items()
    }
    for thread in threads.values():
        thread.start()
    deadline = time.monotonic() + max(0.0, timeout_s)
    for thread in threads.values():
        thread.join(max(0.0, deadline - time.monotonic()))
    return [name for name, thread in threads.items() if thread.is_alive()]


def _env_int(variable: str, default: int) -> int:
    raw = os.environ.get(variable, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        _logger.warning("nemo.lens: ignoring %s=%r (not an integer)", variable, raw)
        return default
    if value <= 0:
        _logger.warning("nemo.lens: ignoring %s=%r (must be positive)", variable, raw)
        return default
    return value


def _in_multiprocessing_child() -> bool:
    module = sys.modules.get("multiprocessing")  # not imported: not its child
    return module is not None and module.parent_process() is not None


def span_processor(
    exporter: SpanExporter, exporter_name: str, health: ExportHealth, *, ours: bool = False,
    tracker: OpenSpanTracker | None = None,
) -> SpanProcessor:  # fmt: skip
    """The processor for *exporter*, the one named *exporter_name* (*ours*: nemo.lens made
    it) or the caller's: batching, sized and with the policy of the ``file`` exporter or
    OTLP (``OTEL_BSP_*`` override the sizes), unless someone watches what it writes.
    *tracker*: the open spans, which the ``file`` records."""
    name = exporter_name if ours else None
    if _watched(exporter):
        # Each span as it ends; failures counted and reported once, not a traceback per
        # span (a console whose reader went away fails every one).
        return SimpleSpanProcessor(SpanGuard(exporter, health, name=name))
    file = isinstance(exporter, JsonLinesSpanExporter) and exporter_name == "file"
    queue = _env_int(
        "OTEL_BSP_MAX_QUEUE_SIZE", FILE_MAX_QUEUE_SIZE if file else OTLP_MAX_QUEUE_SIZE
    )
    batch = _env_int(
        "OTEL_BSP_MAX_EXPORT_BATCH_SIZE",
        FILE_MAX_EXPORT_BATCH_SIZE if file else OTLP_MAX_EXPORT_BATCH_SIZE,
    )
    delay = _env_int(
        "OTEL_BSP_SCHEDULE_DELAY",
        FILE_SCHEDULE_DELAY_MILLIS if file else OTLP_SCHEDULE_DELAY_MILLIS,
    )
    return BatchingSpanProcessor(
        exporter,
        max_queue_size=queue,
        schedule_delay_millis=delay,
        # A batch larger than the queue is refused: an override of one alone must not.
        max_export_batch_size=min(batch, queue),
        # The file is local: waiting for it keeps every span. A collector can be
        # down for hours: waiting for it would stop the job.
        when_full="block" if file else "drop",
        health=health,
        exporter_name=name,
        # A worker process can be killed as soon as its task returns (Pool.terminate()):
        # there the file gets each span before end() returns, as in any forked child.
        synchronous=file and _in_multiprocessing_child(),
        synchronous_after_fork=file,
        # The file also says which goodput spans are open, for a process that dies.
        open_records=OpenSpanRecorder(tracker).due
        if file and tracker is not None and hasattr(exporter, "export_open")
        else None,
    )


def _watched(exporter: object) -> bool:
    # Whether someone watches what it writes as it comes (the console, a test's in-memory
    # exporter): it gets each item as it ends, not in batches.
    return isinstance(exporter, (InMemorySpanExporter, InMemoryLogRecordExporter)) or isinstance(
        getattr(exporter, "sink", None), StdoutSink
    )


def metric_reader_for(exporter: MetricExporter) -> PeriodicExportingMetricReader:
    """The periodic reader of *exporter* (``OTEL_METRIC_EXPORT_*`` read here, where a bad
    value is a warning, not set-up's failure; unset, the SDK's defaults)."""
    return PeriodicExportingMetricReader(
        exporter,
        export_interval_millis=_env_int("OTEL_METRIC_EXPORT_INTERVAL", 60000),
        export_timeout_millis=_env_int("OTEL_METRIC_EXPORT_TIMEOUT", 30000),
    )


def log_processor(
    exporter: LogRecordExporter, exporter_name: str, health: ExportHealth, *, ours: bool = False
) -> LogRecordProcessor:
    """The processor for *exporter*, as :func:`span_processor` chooses one for spans."""
    guard = LogGuard(exporter, health, name=exporter_name if ours else None)
    if _watched(exporter):
        return SimpleLogRecordProcessor(guard)
    return BatchLogRecordProcessor(guard)
