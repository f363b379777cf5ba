"""Build the OpenTelemetry SDK providers for one process (touching no global state: set-up
publishes them), and flush and shut them down in bounded time.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, cast

from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import LogRecordExporter
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import MetricExporter, MetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SpanExporter
from opentelemetry.util.types import AttributeValue

from nemo.lens import semconv
from nemo.lens._core.destinations import Signal
from nemo.lens._sdk.batching import BatchingSpanProcessor, bounded_timeout_ms
from nemo.lens._sdk.exporters.factory import create_exporter
from nemo.lens._sdk.exporters.guard import MetricGuard
from nemo.lens._sdk.exporters.health import ExportHealth, describe_destination
from nemo.lens._sdk.exporters.redaction import exportable_resource
from nemo.lens._sdk.goodput import GoodputRecorder
from nemo.lens._sdk.mirroring import build_mirror
from nemo.lens._sdk.open_spans import OpenSpanTracker
from nemo.lens._sdk.processors import (
    SeedIndependentIdGenerator,
    log_processor,
    metric_reader_for,
    run_bounded,
    span_processor,
)
from nemo.lens._sdk.recording import LensTracerProvider, RecordingSpan
from nemo.lens.config import NemoLensConfig, goodput_windows
from nemo.lens.resources import build_resource
from nemo.lens.sampling import RankAwareSampler

__all__ = ["Pipeline", "build_pipeline", "fan_out"]


# The logger keeps the name users configure it by (this code's module before it moved).
_logger = logging.getLogger("nemo.lens.providers")


@dataclass
class Pipeline:
    """The providers and exporters built for one process (one exporter per configured
    exporter name and signal, or the one passed to set-up instead)."""

    resource: Resource
    tracer_provider: TracerProvider | None = None
    meter_provider: MeterProvider | None = None
    logger_provider: LoggerProvider | None = None
    span_exporters: list[SpanExporter] = field(default_factory=list)
    metric_readers: list[MetricReader] = field(default_factory=list)
    log_exporters: list[LogRecordExporter] = field(default_factory=list)
    tracker: OpenSpanTracker | None = None
    health: ExportHealth = field(default_factory=ExportHealth)
    span_batchers: list[BatchingSpanProcessor] = field(default_factory=list)
    goodput: GoodputRecorder | None = None
    """The live goodput recorder, when ``goodput_metrics`` asks for one."""
    _closed: bool = field(default=False, repr=False)
    _lost_at_flush: int = field(default=0, repr=False)

    @property
    def span_exporter(self) -> SpanExporter | None:
        """The (first) span exporter, if any."""
        return self.span_exporters[0] if self.span_exporters else None

    @property
    def span_batcher(self) -> BatchingSpanProcessor | None:
        """The (first) batching span processor, if any."""
        return self.span_batchers[0] if self.span_batchers else None

    @property
    def exports(self) -> bool:
        """Whether anything leaves the process (an exporter or reader is attached)."""
        return bool(self.span_exporters or self.metric_readers or self.log_exporters)

    def force_flush(self, timeout_ms: float) -> bool:
        """Flush every signal, waiting at most *timeout_ms*; ``True`` when each finished in
        time and nothing was lost since the previous flush (or set-up)."""
        timeout_ms = bounded_timeout_ms(timeout_ms)
        gave_up: list[str] = []  # a flush that honours its timeout returns False instead

        def flush(name: str, provider: Any, timeout: float) -> None:
            if provider.force_flush(timeout) is False:
                gave_up.append(name)

        providers = {
            "trace flush": (self.tracer_provider, int(timeout_ms)),
            "metric flush": (self.meter_provider, timeout_ms),
            "log flush": (self.logger_provider, int(timeout_ms)),
        }
        tasks = {
            name: partial(flush, name, provider, timeout)
            for name, (provider, timeout) in providers.items()
            if provider is not None
        }
        pending = run_bounded(tasks, timeout_ms / 1000) + gave_up
        if pending:
            _logger.warning(
                "nemo.lens: flush did not finish within %d ms (%s still running); is the "
                "collector reachable?",
                timeout_ms,
                ", ".join(pending),
            )
        lost = sum(self.health.lost().values())
        lost_since, self._lost_at_flush = lost - self._lost_at_flush, lost
        return not pending and not lost_since

    def shutdown(self, timeout_ms: float) -> bool:
        """End open spans (marked truncated), flush and shut down everything, waiting at
        most *timeout_ms*; idempotent. ``True`` when every signal finished in time and
        nothing was lost (what was is said in one line, changed values in another)."""
        if self._closed:
            return True
        self._closed = True
        timeout_ms = bounded_timeout_ms(timeout_ms)
        deadline = time.monotonic() + timeout_ms / 1000
        tasks: dict[str, Callable[[], object]] = {}
        undrained: list[str] = []
        tracer_provider, tracker, goodput = self.tracer_provider, self.tracker, self.goodput
        # The goodput figures' last collection waits for the spans shutdown ends.
        goodput_final = threading.Event()
        if tracer_provider is not None:

            def shutdown_traces() -> None:
                try:
                    truncated = tracker.close() if tracker is not None else 0
                    if goodput is not None:
                        goodput.close()
                finally:
                    goodput_final.set()
                if truncated:
                    _logger.info(
                        "nemo.lens: ended %d span(s) still open at shutdown (%s=True)",
                        truncated,
                        semconv.SPAN_TRUNCATED,
                    )
                # Drain for most of the time left, then make the exporters give up (OTLP
                # stops retrying) so that shutdown finishes.
                remaining_ms = max(0.0, (deadline - time.monotonic()) * 1000)
                undrained.extend(_close_all(self.span_batchers, remaining_ms * 0.9))
                tracer_provider.shutdown()

            tasks["trace shutdown"] = shutdown_traces
        if self.meter_provider is not None:
            meter_provider = self.meter_provider

            def shutdown_metrics() -> None:
                timeout = timeout_ms
                if goodput is not None and tracer_provider is not None:
                    goodput_final.wait(max(0.0, deadline - time.monotonic()))
                    timeout = max(0.0, deadline - time.monotonic()) * 1000
                meter_provider.shutdown(timeout_millis=timeout)

            tasks["metric shutdown"] = shutdown_metrics
        if self.logger_provider is not None:
            tasks["log shutdown"] = self.logger_provider.shutdown
        pending = run_bounded(tasks, timeout_ms / 1000) + undrained
        if pending:
            _logger.warning(
                "nemo.lens: shutdown did not finish within %d ms (%s still running in the "
                "background); telemetry not yet exported may be lost. Is the collector "
                "reachable?",
                timeout_ms,
                ", ".join(pending),
            )
        queued: dict[tuple[str, str], int] = {}
        for batcher in self.span_batchers:
            key = ("traces", describe_destination(batcher.exporter))
            queued[key] = queued.get(key, 0) + batcher.pending
        summary = self.health.summary(queued=queued)
        for line in (summary, self.health.changes_summary()):
            if line is not None:
                _logger.warning("%s", line)
        return not pending and summary is None


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

    *config* must be validated and resolved. *exporting* is the export strategy's answer
    for this rank: when ``False`` no exporter or reader is attached, including the ones
    passed in. *span_exporter* / *metric_reader* / *log_exporter* replace every configured
    exporter for their signal only. On failure, everything already built is shut down
    before the exception propagates.
    """
    # First: a profiler whose package is missing fails before anything is built.
    mirror = build_mirror(config.profilers) if config.traces_enabled else None
    resource, resource_changes = exportable_resource(
        build_resource(config, rank, world_size, resource_attributes)
    )
    names = [name for name in config.exporters if name != "none"]
    # A caller's span exporter gets the policy of the file exporter it may stand in for.
    caller_name = "file" if "file" in names else names[0] if names else "none"

    # Exporters first: they are what can fail, and they start no threads. Only the ones
    # created here are released on failure: a corrected call can reuse the caller's.
    created: list[Callable[[], object]] = []

    def create(signal: Signal, given: object) -> list[tuple[str, Any]]:
        if given is not None:
            return [(caller_name, given)]
        made = []
        for name in names:
            exporter = create_exporter(
                signal, name, path=trace_path, console_format=config.console_format
            )
            created.append(exporter.shutdown)
            made.append((name, exporter))
        return made

    span_exps: list[tuple[str, SpanExporter]] = []
    metric_exps: list[tuple[str, MetricExporter]] = []
    log_exps: list[tuple[str, LogRecordExporter]] = []
    try:
        if exporting and config.traces_enabled:
            span_exps = create("traces", span_exporter)
        if exporting and config.metrics_enabled and metric_reader is None:
            metric_exps = create("metrics", None)
        if exporting and config.logs_enabled:
            log_exps = create("logs", log_exporter)
    except BaseException:
        run_bounded({f"discard exporter {i}": fn for i, fn in enumerate(created)}, 1.0)
        raise

    pipeline = Pipeline(
        resource=resource,
        span_exporters=[exporter for _, exporter in span_exps],
        log_exporters=[exporter for _, exporter in log_exps],
    )
    if resource_changes is not None:
        pipeline.health.changed(*resource_changes)
    try:
        if exporting and config.metrics_enabled:
            if metric_reader is not None:
                pipeline.metric_readers.append(metric_reader)
            for name, metric_exp in metric_exps:
                reader = metric_reader_for(MetricGuard(metric_exp, pipeline.health, name=name))
                created.append(reader.shutdown)
                pipeline.metric_readers.append(reader)
        # The meter provider first: it is the one step that fails in practice (the SDK
        # refuses a reader registered with another provider), before anything holds the
        # caller's span exporter.
        if config.metrics_enabled:
            pipeline.meter_provider = MeterProvider(
                metric_readers=pipeline.metric_readers, resource=resource, shutdown_on_exit=False
            )
        if config.traces_enabled:
            sampler = RankAwareSampler(exporting, rank=rank) if config.sampler_enabled else None
            tracer_provider = LensTracerProvider(
                sampler=sampler, resource=resource, id_generator=SeedIndependentIdGenerator()
            )
            pipeline.tracer_provider = tracer_provider
            sinks: list[Callable[[RecordingSpan], None]] = []
            windows = goodput_windows(config.goodput_metrics)
            if windows and not pipeline.metric_readers:
                windows = ()  # nothing would read the figures
            if span_exps or windows:
                pipeline.tracker = OpenSpanTracker()
                tracer_provider.add_span_processor(pipeline.tracker)
            if windows and pipeline.meter_provider is not None:
                # First of the sinks: it sees a span before any exporter can keep it waiting.
                goodput = GoodputRecorder(tracker=pipeline.tracker, windows_s=windows)
                goodput.observe_with(pipeline.meter_provider.get_meter(semconv.SCOPE_NAME))
                tracer_provider.add_span_processor(goodput)
                sinks.append(goodput.observe)
                pipeline.goodput = goodput
            # One processor per exporter, each with its own queue and policy: a collector
            # that is down never holds up the file, nor the file's wait the collector.
            for name, span_exp in span_exps:
                processor = span_processor(
                    span_exp,
                    name,
                    pipeline.health,
                    ours=span_exporter is None,
                    tracker=pipeline.tracker,
                )
                if isinstance(processor, BatchingSpanProcessor):
                    if pipeline.goodput is not None and not pipeline.span_batchers:
                        processor.on_poll = pipeline.goodput.poll
                    pipeline.span_batchers.append(processor)
                    sinks.append(processor.queue_span)
                else:
                    # A recorded span reads as the finished span on_end expects.
                    sinks.append(cast("Callable[[RecordingSpan], None]", processor.on_end))
                tracer_provider.add_span_processor(processor)
            # The primitives record their spans and hand them to the same processors.
            tracer_provider.record_to(pipeline.tracker, fan_out(sinks), mirror)
        if config.logs_enabled:
            logger_provider = LoggerProvider(resource=resource, shutdown_on_exit=False)
            pipeline.logger_provider = logger_provider
            for name, log_exp in log_exps:
                logger_provider.add_log_record_processor(
                    log_processor(log_exp, name, pipeline.health, ours=log_exporter is None)
                )
    except BaseException:
        # The providers built so far (maybe with a caller's exporter), then what this
        # call created.
        pipeline.shutdown(timeout_ms=1000)
        run_bounded({f"discard {i}": fn for i, fn in enumerate(created)}, 1.0)
        raise
    return pipeline


def fan_out(
    sinks: Sequence[Callable[[RecordingSpan], None]],
) -> Callable[[RecordingSpan], None] | None:
    """One callable that hands a recorded span to every sink, in order (with one sink, that
    sink itself: a job with one exporter pays nothing for several)."""
    if len(sinks) <= 1:
        return sinks[0] if sinks else None
    if len(sinks) == 2:  # the goodput recorder and one exporter: no loop
        first, second = sinks

        def both(span: RecordingSpan) -> None:
            first(span)
            second(span)

        return both
    every = tuple(sinks)

    def each(span: RecordingSpan) -> None:
        for sink in every:
            sink(span)

    return each


def _close_all(batchers: Sequence[BatchingSpanProcessor], timeout_ms: float) -> list[str]:
    # Close every batcher at once, each draining for at most timeout_ms; "span queue" for
    # each that did not drain.
    if len(batchers) <= 1:
        return [] if all(b.close(timeout_millis=timeout_ms) for b in batchers) else ["span queue"]
    drained: list[bool] = []
    tasks = {
        f"span queue {n}": partial(lambda b: drained.append(b.close(timeout_ms)), batcher)
        for n, batcher in enumerate(batchers)
    }
    # Each close returns within its timeout plus its exporter's shutdown.
    run_bounded(tasks, timeout_ms / 1000 + 1.0)
    return ["span queue"] * (len(batchers) - sum(drained))
