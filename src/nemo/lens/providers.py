"""Build the OpenTelemetry SDK providers for one process (the SDK side of the wall).

:func:`build_pipeline` constructs everything set-up needs -- resource,
exporters, processors, tracer/meter/logger providers -- without touching any
global state; :mod:`nemo.lens.handle` publishes the result in one step, or
discards it with :meth:`Pipeline.shutdown` when something failed first. Only
:mod:`nemo.lens.handle` imports this module, and only on the enabled path.

0.1.0's :func:`build_providers` and :func:`build_noop_providers` are here too,
for code that installed providers itself; both go through set-up.

Choices made here, and why:

* **Ids** come from :class:`UrandomIdGenerator` (``os.urandom``), not the SDK's
  ``random``-based generator, so ranks that all call ``random.seed(0)`` still
  produce distinct span and trace ids (cost: see :mod:`nemo.lens._ids`).
* **Batching.** The SDK's defaults (queue 2048, batch 512, every 5 s) drop spans
  once a burst outruns the export thread, and a per-step job with microbatch
  and communication spans easily makes such bursts. OTLP (and any exporter
  passed in) gets a queue of :data:`OTLP_MAX_QUEUE_SIZE` spans exported in
  batches of :data:`OTLP_MAX_EXPORT_BATCH_SIZE` every
  :data:`OTLP_SCHEDULE_DELAY_MILLIS` ms (a few tens of MB at most when full);
  the file exporter, which is local and fast, gets
  :data:`FILE_MAX_QUEUE_SIZE` / :data:`FILE_MAX_EXPORT_BATCH_SIZE` every
  :data:`FILE_SCHEDULE_DELAY_MILLIS` ms. ``OTEL_BSP_MAX_QUEUE_SIZE``,
  ``OTEL_BSP_MAX_EXPORT_BATCH_SIZE`` and ``OTEL_BSP_SCHEDULE_DELAY`` still
  override these when set. The processor is nemo.lens's
  :class:`~nemo.lens.exporters.batch.BatchingSpanProcessor`, not the SDK's:
  when its queue is full the file exporter makes the job wait for the writer
  (so a graceful exit loses no span) unless the writer is stalled, and OTLP
  drops the new span (so a dead collector never holds the job up). Failures and
  drops are logged once and totalled at shutdown
  (:mod:`nemo.lens.exporters.health`), and every span exporter sees spans
  through :class:`~nemo.lens.exporters.redaction.RedactingSpanExporter`, which
  redacts them and makes every value exportable (one bad value must not cost
  the batch it travels in). In a worker process -- forked after set-up, or
  started by ``multiprocessing`` -- the ``file`` exporter writes each span as it
  ends: ``Pool.terminate()`` kills workers the moment their last task returns.
* **Synchronous exporters** -- ``console`` and the SDK's
  ``InMemorySpanExporter`` -- get a ``SimpleSpanProcessor``: a span is visible
  the moment it ends, which is what a person at a terminal or a test wants,
  and neither can block on a network. Their failures are reported like the
  batched exporters' (once, then counted), not as a traceback per span.
* **The resource** is made exportable once, here: a value no exporter could
  write (a ``SLURM_JOB_NAME`` that is not UTF-8) would otherwise cost every
  batch of the job.
* **Metrics** are read by a ``PeriodicExportingMetricReader`` every
  ``OTEL_METRIC_EXPORT_INTERVAL`` ms (default :data:`METRIC_EXPORT_INTERVAL_MILLIS`),
  each export bounded by ``OTEL_METRIC_EXPORT_TIMEOUT`` ms (default
  :data:`METRIC_EXPORT_TIMEOUT_MILLIS`). The variables are parsed here, not by
  the SDK: its reader raises on ``0`` or a negative value and so would fail
  set-up, where a bad value here is a warning naming the variable and the
  default is used. Shutdown always collects and exports once more, so a job
  shorter than the interval still reports.
* **Logs** (``logs_enabled``) get a ``LoggerProvider``; records reach it through
  the OpenTelemetry Logs API or :mod:`nemo.lens.logging_bridge`. ``console``
  and the SDK's ``InMemoryLogRecordExporter`` get a ``SimpleLogRecordProcessor``
  (records visible at once), everything else a ``BatchLogRecordProcessor``
  (``OTEL_BLRP_*`` apply).
* **Open spans** are tracked by :class:`OpenSpanTracker` on exporting ranks and
  ended at shutdown with ``nemo.span.truncated = True``, so a job killed
  mid-step still shows the step it died in. A forked child forgets the
  parent's open spans: they are the parent's to end.
* **Bounded shutdown.** The SDK's flush and shutdown can block for 10-30 s on
  an unreachable collector (and ``force_flush`` ignores its timeout), so each
  signal shuts down in its own daemon thread and the caller waits at most its
  timeout. The SDK's own ``atexit`` hooks are disabled (``shutdown_on_exit=False``);
  :mod:`nemo.lens.handle` registers a bounded one instead.
* **Non-exporting ranks** get real providers without exporters: spans exist
  and propagate (so a context broadcast from such a rank is valid and sampled)
  but go nowhere. With ``sampler_enabled`` they get a
  :class:`~nemo.lens.sampling.RankAwareSampler` that drops every span at
  creation, which is cheaper when the trace context of those ranks is not
  needed elsewhere.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import os
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final, TypeVar

from opentelemetry.context import Context
from opentelemetry.sdk._logs import LoggerProvider, LogRecordProcessor
from opentelemetry.sdk._logs.export import (
    BatchLogRecordProcessor,
    InMemoryLogRecordExporter,
    LogRecordExporter,
    SimpleLogRecordProcessor,
)
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import (
    MetricExporter,
    MetricReader,
    PeriodicExportingMetricReader,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.id_generator import IdGenerator
from opentelemetry.util.types import AttributeValue

from nemo.lens import _fork, semconv
from nemo.lens._ids import random_span_id, random_trace_id
from nemo.lens.config import NemoLensConfig
from nemo.lens.exporters import Signal, otlp_protocol
from nemo.lens.exporters.batch import BatchingSpanProcessor
from nemo.lens.exporters.factory import (
    create_log_exporter,
    create_metric_exporter,
    create_span_exporter,
)
from nemo.lens.exporters.health import (
    ExportHealth,
    ReportingLogExporter,
    ReportingMetricExporter,
    ReportingSpanExporter,
    exporter_loggers,
)
from nemo.lens.exporters.jsonl import JsonLinesLogExporter, JsonLinesSpanExporter, StdoutSink
from nemo.lens.exporters.redaction import Changes, RedactingSpanExporter, clean_resource
from nemo.lens.exporters.sanitize import safe_str
from nemo.lens.exporters.secrets import scrub
from nemo.lens.resources import build_resource
from nemo.lens.sampling import RankAwareSampler

if TYPE_CHECKING:
    from nemo.lens.handle import TelemetryHandle

__all__ = [
    "FILE_MAX_EXPORT_BATCH_SIZE",
    "FILE_MAX_QUEUE_SIZE",
    "FILE_SCHEDULE_DELAY_MILLIS",
    "METRIC_EXPORT_INTERVAL_MILLIS",
    "METRIC_EXPORT_TIMEOUT_MILLIS",
    "OTLP_MAX_EXPORT_BATCH_SIZE",
    "OTLP_MAX_QUEUE_SIZE",
    "OTLP_SCHEDULE_DELAY_MILLIS",
    "TRUNCATED_ATTRIBUTE",
    "OpenSpanTracker",
    "Pipeline",
    "UrandomIdGenerator",
    "bounded_timeout_ms",
    "build_noop_providers",
    "build_pipeline",
    "build_providers",
    "run_bounded",
]

_logger = logging.getLogger(__name__)

_E = TypeVar("_E")
# (a factory a forked child makes its own exporter with, or None to share the
# parent's; whether the child may use the exporter at all)
_AfterFork = tuple[Callable[[], _E | None] | None, bool]

TRUNCATED_ATTRIBUTE: Final = semconv.SPAN_TRUNCATED
"""Set to ``True`` on spans that were still open at shutdown and ended by it."""

METRIC_EXPORT_INTERVAL_MILLIS: Final = 60000
"""Milliseconds between metric exports when ``OTEL_METRIC_EXPORT_INTERVAL`` is unset (SDK value)."""
METRIC_EXPORT_TIMEOUT_MILLIS: Final = 30000
"""Longest one metric export may take when ``OTEL_METRIC_EXPORT_TIMEOUT`` is unset (SDK value)."""

OTLP_MAX_QUEUE_SIZE: Final = 16384
"""Spans buffered per process before the OTLP batch processor drops (SDK default 2048)."""
OTLP_MAX_EXPORT_BATCH_SIZE: Final = 1024
"""Spans per OTLP request (SDK default 512); about 1 MB, well under gRPC's 4 MB limit."""
OTLP_SCHEDULE_DELAY_MILLIS: Final = 2000
"""Longest wait between OTLP exports when the queue is not filling (SDK default 5000)."""
FILE_MAX_QUEUE_SIZE: Final = 65536
"""Spans buffered per process by the file exporter's batch processor.

A queued span holds about 2.8 KB, so a full queue is about 180 MB; it is over
3 s of a sustained 20,000 spans/s, where ``python -m bench`` measures no drop
and flat memory (the writer empties the queue every batch, a few MB at most).
"""
FILE_MAX_EXPORT_BATCH_SIZE: Final = 4096
"""Spans written per batch by the file exporter: one ``write`` of about 2.8 MB."""
FILE_SCHEDULE_DELAY_MILLIS: Final = 1000
"""Longest wait between file writes when the queue is not filling."""


class UrandomIdGenerator(IdGenerator):
    """Span and trace ids from ``os.urandom``: unaffected by ``random.seed``, fork-safe."""

    def generate_span_id(self) -> int:
        """Return a random non-zero 64-bit span id."""
        return random_span_id()

    def generate_trace_id(self) -> int:
        """Return a random non-zero 128-bit trace id."""
        return random_trace_id()

    def is_trace_id_random(self) -> bool:
        """All 128 bits are random (W3C ``random-trace-id`` flag)."""
        return True


class OpenSpanTracker(SpanProcessor):
    """Remembers spans that started and have not ended, so shutdown can end them.

    Spans are held strongly: a span that was started and never ended (a crash
    path, a generator never resumed) is exported, marked truncated, at shutdown
    instead of vanishing. Keyed by (trace id, span id) because ``on_end``
    receives a read-only copy, not the object ``on_start`` saw.

    No lock: single ``dict`` operations are atomic. A lock taken on every span
    start and end would sometimes be held by the main thread at the instant a
    SIGTERM handler runs there, and the shutdown that handler starts would then
    wait for it in vain; after ``fork`` it could be held by a thread the child
    does not have.
    """

    def __init__(self) -> None:
        self._open: dict[tuple[int, int], Span] = {}
        _fork.register(self)

    def _after_fork_in_child(self) -> None:
        # The parent's open spans are the parent's to end; a child ending its
        # copies would export them twice, under the same ids.
        self._open = {}

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        """Remember *span*."""
        context = span.context
        if context is not None:
            self._open[(context.trace_id, context.span_id)] = span

    def on_end(self, span: ReadableSpan) -> None:
        """Forget *span*."""
        context = span.context
        if context is not None:
            self._open.pop((context.trace_id, context.span_id), None)

    @property
    def open_count(self) -> int:
        """How many spans are open right now."""
        return len(self._open)

    def end_open_spans(self) -> int:
        """End every open span with ``nemo.span.truncated = True``; return how many."""
        # Swap in a fresh dict first: spans that start from now on go there.
        open_spans, self._open = self._open, {}
        spans = list(open_spans.values())
        ended = 0
        # Children were started after their parents: end them first so that each
        # span's end time is not later than its parent's.
        for span in reversed(spans):
            if span.end_time is None:
                span.set_attribute(TRUNCATED_ATTRIBUTE, True)
                span.end()
                ended += 1
        return ended

    def shutdown(self) -> None:
        """Nothing to release (ending open spans is the pipeline's first shutdown step)."""

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Nothing is buffered here."""
        return True


def bounded_timeout_ms(timeout_ms: float) -> float:
    """*timeout_ms* as a wait the ``threading`` module accepts: at least 0, at most
    half of ``threading.TIMEOUT_MAX`` (over a century: what infinity means), NaN as 0."""
    if math.isnan(timeout_ms) or timeout_ms <= 0:
        return 0.0
    return float(min(timeout_ms, threading.TIMEOUT_MAX * 500))


def run_bounded(tasks: Mapping[str, Callable[[], object]], timeout_s: float) -> list[str]:
    """Run each task in its own daemon thread; wait at most *timeout_s* in total.

    Returns the names of the tasks still running at the deadline (they keep
    running in the background; daemon threads never hold up interpreter exit).
    Exceptions raised by a task are logged (one line; the traceback at DEBUG),
    not raised.
    """

    def guarded(name: str, task: Callable[[], object]) -> Callable[[], None]:
        def run() -> None:
            try:
                task()
            except Exception as exc:
                # One line (the SDK's provider shutdowns raise when their deadline
                # has passed, which a short timeout makes routine); the traceback
                # at DEBUG for whoever needs it.
                _logger.warning("nemo.lens: %s failed: %s", name, scrub(safe_str(exc)))
                _logger.debug("nemo.lens: %s failed", name, exc_info=True)

        return run

    threads = {
        name: threading.Thread(target=guarded(name, task), name=f"nemo.lens {name}", daemon=True)
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
    """Whether this process was started by ``multiprocessing`` (a ``Pool`` worker, say)."""
    module = sys.modules.get("multiprocessing")
    if module is None:
        return False
    try:
        return module.parent_process() is not None
    except Exception:  # pragma: no cover - a multiprocessing without parent_process
        return False


def _batch_span_processor(
    exporter: SpanExporter,
    *,
    file: bool,
    health: ExportHealth | None = None,
    quiet_loggers: tuple[str, ...] = (),
    exporter_factory: Callable[[], SpanExporter] | None = None,
    usable_after_fork: bool = True,
) -> BatchingSpanProcessor:
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
    # A batch larger than the queue is refused; an env override of one without
    # the other must not make set-up fail.
    return BatchingSpanProcessor(
        exporter,
        max_queue_size=queue,
        schedule_delay_millis=delay,
        max_export_batch_size=min(batch, queue),
        # The file is local: waiting for it keeps every span. A collector can be
        # down for hours: waiting for it would stop the job.
        when_full="block" if file else "drop",
        health=health,
        quiet_loggers=quiet_loggers,
        exporter_factory=exporter_factory,
        usable_after_fork=usable_after_fork,
        # A worker process can be killed as soon as its task returns
        # (multiprocessing.Pool's terminate()): there the file gets each span
        # before end() returns, as it does in any child forked after set-up.
        synchronous=file and _in_multiprocessing_child(),
        synchronous_after_fork=file,
    )


def _span_processor(
    exporter: SpanExporter,
    exporter_name: str,
    health: ExportHealth | None = None,
    *,
    ours: bool = False,
    after_fork: _AfterFork[SpanExporter] = (None, True),
) -> SpanProcessor:
    """The processor for *exporter*.

    *ours*: nemo.lens created it, so its own failure logs are quieted.
    *after_fork*: what a forked child does with it (see :func:`_in_forked_child`).
    """
    synchronous = isinstance(exporter, InMemorySpanExporter) or (
        isinstance(exporter, JsonLinesSpanExporter) and isinstance(exporter.sink, StdoutSink)
    )
    is_file = isinstance(exporter, JsonLinesSpanExporter) and exporter_name == "file"
    quiet_loggers = exporter_loggers(exporter) if ours else ()
    on_changes = health.changed if health is not None else None
    redacting = RedactingSpanExporter(exporter, on_changes)
    if synchronous:
        if health is None:
            return SimpleSpanProcessor(redacting)
        # Failures counted and reported once, not a traceback per span (a
        # console whose reader went away fails every one).
        return SimpleSpanProcessor(
            ReportingSpanExporter(redacting, health, quiet_loggers=quiet_loggers)
        )
    make = _or(after_fork[0], exporter)
    factory = None if make is None else (lambda: RedactingSpanExporter(make(), on_changes))
    return _batch_span_processor(
        redacting,
        file=is_file,
        health=health,
        quiet_loggers=quiet_loggers,
        exporter_factory=factory,
        usable_after_fork=after_fork[1],
    )


def _in_forked_child(
    name: str, signal: Signal, create: Callable[[str], _E | None]
) -> _AfterFork[_E]:
    """What a forked child exports *signal* through: ``(factory, usable_after_fork)``.

    The JSON-lines exporters write through a sink that is safe to share (no
    factory). Over OTLP/HTTP the child makes its own exporter: its copy of the
    parent's keep-alive connection is shared with the parent. OTLP over gRPC is
    not used in a child at all: gRPC is not fork-safe while another thread is
    calling into it, and a child that used it hung or crashed in our tests.
    """
    if name != "otlp":
        return None, True
    if otlp_protocol(signal) == "grpc":
        return None, False
    return (lambda: create(name)), True


def _metric_reader(exporter: MetricExporter) -> PeriodicExportingMetricReader:
    return PeriodicExportingMetricReader(
        exporter,
        export_interval_millis=_env_int(
            "OTEL_METRIC_EXPORT_INTERVAL", METRIC_EXPORT_INTERVAL_MILLIS
        ),
        export_timeout_millis=_env_int("OTEL_METRIC_EXPORT_TIMEOUT", METRIC_EXPORT_TIMEOUT_MILLIS),
    )


def _log_processor(
    exporter: LogRecordExporter,
    health: ExportHealth | None = None,
    *,
    ours: bool = False,
    after_fork: _AfterFork[LogRecordExporter] = (None, True),
) -> LogRecordProcessor:
    synchronous = isinstance(exporter, InMemoryLogRecordExporter) or (
        isinstance(exporter, JsonLinesLogExporter) and isinstance(exporter.sink, StdoutSink)
    )
    if health is not None:
        exporter = ReportingLogExporter(
            exporter,
            health,
            quiet_loggers=exporter_loggers(exporter) if ours else (),
            factory=_or(after_fork[0], exporter),
            usable_after_fork=after_fork[1],
        )
    if synchronous:
        return SimpleLogRecordProcessor(exporter)
    return BatchLogRecordProcessor(exporter)


def _or(make: Callable[[], _E | None] | None, fallback: _E) -> Callable[[], _E] | None:
    """*make* as a factory that never returns ``None`` (it falls back to *fallback*)."""
    if make is None:
        return None
    factory = make

    def made() -> _E:
        fresh = factory()
        return fresh if fresh is not None else fallback

    return made


@dataclass
class Pipeline:
    """The providers and exporters built for one process, not yet published."""

    resource: Resource
    tracer_provider: TracerProvider | None = None
    meter_provider: MeterProvider | None = None
    logger_provider: LoggerProvider | None = None
    span_exporter: SpanExporter | None = None
    metric_reader: MetricReader | None = None
    log_exporter: LogRecordExporter | None = None
    tracker: OpenSpanTracker | None = None
    health: ExportHealth = field(default_factory=ExportHealth)
    """Export failures and drops of every signal (summarised at shutdown)."""
    span_batcher: BatchingSpanProcessor | None = None
    _closed: bool = field(default=False, repr=False)
    _lost_at_flush: int = field(default=0, repr=False)

    @property
    def exports(self) -> bool:
        """Whether anything leaves the process (an exporter or reader is attached)."""
        return (
            self.span_exporter is not None
            or self.metric_reader is not None
            or self.log_exporter is not None
        )

    def force_flush(self, timeout_ms: float) -> bool:
        """Flush every signal, waiting at most *timeout_ms*.

        ``True`` when every signal finished in time and nothing was lost since
        the previous flush (or set-up): no span dropped, and no export failed.
        """
        timeout_ms = bounded_timeout_ms(timeout_ms)
        tasks: dict[str, Callable[[], object]] = {}
        if self.tracer_provider is not None:
            tracer_provider = self.tracer_provider
            tasks["trace flush"] = lambda: tracer_provider.force_flush(int(timeout_ms))
        if self.meter_provider is not None:
            meter_provider = self.meter_provider
            tasks["metric flush"] = lambda: meter_provider.force_flush(timeout_ms)
        if self.logger_provider is not None:
            logger_provider = self.logger_provider
            tasks["log flush"] = lambda: logger_provider.force_flush(int(timeout_ms))
        # A flush that honours its timeout returns False instead of overrunning it.
        gave_up: list[str] = []

        def reporting(name: str, flush: Callable[[], object]) -> Callable[[], None]:
            def run() -> None:
                if flush() is False:
                    gave_up.append(name)

            return run

        tasks = {name: reporting(name, flush) for name, flush in tasks.items()}
        pending = run_bounded(tasks, timeout_ms / 1000) + gave_up
        if pending:
            _logger.warning(
                "nemo.lens: flush did not finish within %d ms (%s still running); is the "
                "collector reachable?",
                timeout_ms,
                ", ".join(pending),
            )
        lost = self.health.lost_total()
        lost_since, self._lost_at_flush = lost - self._lost_at_flush, lost
        return not pending and not lost_since

    def shutdown(self, timeout_ms: float) -> bool:
        """End open spans, flush and shut down everything; wait at most *timeout_ms*.

        Idempotent. Returns ``True`` when every signal finished in time and
        nothing was lost: every span, metric export and log record was
        delivered (none dropped, none failed to export, none left queued).
        What could not be delivered is logged in one summary line, and values
        that had to be changed to be exported in another.
        """
        if self._closed:
            return True
        self._closed = True
        timeout_ms = bounded_timeout_ms(timeout_ms)
        deadline = time.monotonic() + timeout_ms / 1000
        tasks: dict[str, Callable[[], object]] = {}
        batcher = self.span_batcher
        undrained: list[str] = []
        if self.tracer_provider is not None:
            tracer_provider = self.tracer_provider
            tracker = self.tracker

            def shutdown_traces() -> None:
                if tracker is not None:
                    truncated = tracker.end_open_spans()
                    if truncated:
                        _logger.info(
                            "nemo.lens: ended %d span(s) still open at shutdown (%s=True)",
                            truncated,
                            TRUNCATED_ATTRIBUTE,
                        )
                if batcher is not None:
                    # Drain for most of the time left, then make the exporter give
                    # up (an OTLP exporter stops retrying) so shutdown can finish.
                    remaining_ms = (deadline - time.monotonic()) * 1000
                    if not batcher.close(timeout_millis=max(0.0, remaining_ms * 0.9)):
                        undrained.append("span queue")
                tracer_provider.shutdown()

            tasks["trace shutdown"] = shutdown_traces
        if self.meter_provider is not None:
            meter_provider = self.meter_provider
            tasks["metric shutdown"] = lambda: meter_provider.shutdown(timeout_millis=timeout_ms)
        if self.logger_provider is not None:
            logger_provider = self.logger_provider
            tasks["log shutdown"] = logger_provider.shutdown
        pending = run_bounded(tasks, timeout_ms / 1000) + undrained
        if pending:
            _logger.warning(
                "nemo.lens: shutdown did not finish within %d ms (%s still running in the "
                "background); telemetry not yet exported may be lost. Is the collector "
                "reachable?",
                timeout_ms,
                ", ".join(pending),
            )
        queued = {"traces": batcher.pending} if batcher is not None else {}
        summary = self.health.summary(queued)
        if summary is not None:
            _logger.warning("%s", summary)
        changes = self.health.changes_summary()
        if changes is not None:
            _logger.warning("%s", changes)
        return not pending and summary is None


def _exportable_resource(resource: Resource) -> tuple[Resource, tuple[Changes, str] | None]:
    """*resource* made exportable, and what changed with the warning that says so.

    Every span, metric and log record carries the resource: one value in it
    that no exporter can write (a ``SLURM_JOB_NAME`` or ``WANDB_PROJECT`` that
    is not valid Unicode) would otherwise cost every batch of the job.
    """
    cleaned, changes = clean_resource(resource)
    if not changes:
        return resource, None
    keys = sorted(
        key for key, value in resource.attributes.items() if cleaned.attributes.get(key) != value
    )
    shown = ", ".join(repr(key) for key in keys) or "(keys that were not valid text)"
    explanation = (
        f"nemo.lens: resource attribute(s) {shown} held values no exporter can write as they "
        f"are ({next(iter(changes))}); exported changed. They come from the job's "
        "configuration or environment (SLURM_*, WANDB_*, OTEL_RESOURCE_ATTRIBUTES, ...)."
    )
    return cleaned, (changes, explanation)


def build_pipeline(
    config: NemoLensConfig,
    *,
    rank: int,
    world_size: int,
    exporting: bool,
    trace_path: str | None,
    resource_attributes: Mapping[str, AttributeValue] | None = None,
    span_exporter: SpanExporter | None = None,
    metric_reader: MetricReader | None = None,
    log_exporter: LogRecordExporter | None = None,
) -> Pipeline:
    """Build (but do not publish) the providers for one process.

    *config* must be validated and resolved. *exporting* is the export
    strategy's answer for this rank: when ``False`` no exporter or reader is
    attached, including the ones passed in. *span_exporter* / *metric_reader* /
    *log_exporter* replace the configured exporter for their signal only. On failure,
    everything already built is shut down before the exception propagates.
    """
    resource = build_resource(config, rank, world_size, resource_attributes)
    resource, resource_changes = _exportable_resource(resource)
    name = config.exporter.strip().lower()

    # Exporters first: they are what can fail (a file that cannot be opened, a
    # missing OTLP package) and they start no threads. Only the ones created
    # here are released on failure; the caller's exporter and reader are left
    # untouched so that a corrected call can reuse them.
    created: list[Callable[[], object]] = []
    span_exp: SpanExporter | None = None
    metric_exp = None
    log_exp: LogRecordExporter | None = None
    try:
        if exporting and config.traces_enabled:
            span_exp = span_exporter
            if span_exp is None:
                span_exp = create_span_exporter(name, path=trace_path)
                if span_exp is not None:
                    created.append(span_exp.shutdown)
        if exporting and config.metrics_enabled and metric_reader is None:
            metric_exp = create_metric_exporter(name, path=trace_path)
            if metric_exp is not None:
                created.append(metric_exp.shutdown)
        if exporting and config.logs_enabled:
            log_exp = log_exporter
            if log_exp is None:
                log_exp = create_log_exporter(name, path=trace_path)
                if log_exp is not None:
                    created.append(log_exp.shutdown)
    except BaseException:
        run_bounded({f"discard exporter {i}": fn for i, fn in enumerate(created)}, 1.0)
        raise

    pipeline = Pipeline(resource=resource, span_exporter=span_exp, log_exporter=log_exp)
    if resource_changes is not None:
        pipeline.health.changed(*resource_changes)
    try:
        if exporting and config.metrics_enabled:
            if metric_reader is not None:
                pipeline.metric_reader = metric_reader
            elif metric_exp is not None:
                recreate, usable = _in_forked_child(name, "metrics", create_metric_exporter)
                reader = _metric_reader(
                    ReportingMetricExporter(
                        metric_exp,
                        pipeline.health,
                        quiet_loggers=exporter_loggers(metric_exp),
                        factory=_or(recreate, metric_exp),
                        usable_after_fork=usable,
                    )
                )
                created.append(reader.shutdown)
                pipeline.metric_reader = reader
        # The meter provider first: it is the one step that fails in practice (the
        # SDK refuses a reader already registered with another provider), and
        # nothing holding the caller's span exporter exists yet to be released.
        if config.metrics_enabled:
            readers = [pipeline.metric_reader] if pipeline.metric_reader is not None else []
            pipeline.meter_provider = MeterProvider(
                metric_readers=readers, resource=resource, shutdown_on_exit=False
            )
        if config.traces_enabled:
            sampler = RankAwareSampler(exporting, rank=rank) if config.sampler_enabled else None
            tracer_provider = TracerProvider(
                sampler=sampler,
                resource=resource,
                shutdown_on_exit=False,
                id_generator=UrandomIdGenerator(),
            )
            pipeline.tracer_provider = tracer_provider
            if span_exp is not None:
                pipeline.tracker = OpenSpanTracker()
                tracer_provider.add_span_processor(pipeline.tracker)
                processor = _span_processor(
                    span_exp,
                    name,
                    pipeline.health,
                    ours=span_exporter is None,
                    after_fork=(
                        _in_forked_child(name, "traces", create_span_exporter)
                        if span_exporter is None
                        else (None, True)
                    ),
                )
                if isinstance(processor, BatchingSpanProcessor):
                    pipeline.span_batcher = processor
                tracer_provider.add_span_processor(processor)
        if config.logs_enabled:
            logger_provider = LoggerProvider(resource=resource, shutdown_on_exit=False)
            pipeline.logger_provider = logger_provider
            if log_exp is not None:
                logger_provider.add_log_record_processor(
                    _log_processor(
                        log_exp,
                        pipeline.health,
                        ours=log_exporter is None,
                        after_fork=(
                            _in_forked_child(name, "logs", create_log_exporter)
                            if log_exporter is None
                            else (None, True)
                        ),
                    )
                )
    except BaseException:
        # Release what exists: the providers built so far (which may include a
        # caller's exporter already attached), then what this call created.
        pipeline.shutdown(timeout_ms=1000)
        run_bounded({f"discard {i}": fn for i, fn in enumerate(created)}, 1.0)
        raise
    return pipeline


# -- the 0.1.0 entry points -------------------------------------------------------------


def build_providers(
    config: NemoLensConfig,
    rank: int = 0,
    world_size: int = 1,
    resource_attributes: Mapping[str, AttributeValue] | None = None,
    span_exporter: SpanExporter | None = None,
    metric_reader: MetricReader | None = None,
) -> TelemetryHandle:
    """Install the SDK providers as set-up does on an exporting rank (0.1.0's helper).

    Runs :func:`nemo.lens.setup_telemetry` for *config* as if telemetry were
    enabled and this rank exported, replacing an active set-up, and leaves the
    enabled span groups as they were (0.1.0's helper did not touch them; set-up
    enables them). Everything is validated first, as set-up does. Returns the
    handle (0.1.0 returned ``None``); shut it down, or let the exit hook do it.
    """
    from nemo.lens import handle, state
    from nemo.lens.strategies import AllRanksStrategy

    if not isinstance(config, NemoLensConfig):
        raise TypeError(
            f"build_providers() needs a NemoLensConfig, got {type(config).__name__}; "
            "build one with NemoLensConfig(...) or NemoLensConfig.from_env()"
        )
    groups = state.enabled_span_groups()
    installed = handle.setup_telemetry(
        dataclasses.replace(config, enabled=True),
        rank,
        world_size,
        resource_attributes,
        span_exporter,
        metric_reader,
        export_strategy=AllRanksStrategy(),
        _allow_reinit=True,
    )
    state.set_enabled_span_groups(groups)
    return installed


def build_noop_providers() -> None:
    """Make nemo.lens's providers no-ops (0.1.0's helper for silent ranks).

    Shuts down an active set-up (flushing what it buffered): nemo.lens's
    tracer, meter and logger then forward to no-ops, as before any set-up.
    OpenTelemetry's global providers that nemo.lens never claimed stay as the
    application set them.
    """
    from nemo.lens import handle

    current = handle._current
    if current is not None:
        current.shutdown()
