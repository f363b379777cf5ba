"""The one wrapper every exporter nemo.lens drives is called through.

:class:`Forwarder` sends quietly (:func:`~nemo.lens._sdk.exporters.quiet.quiet`),
counts a failure or an exception instead of raising it, reports it once to the
pipeline's :class:`~nemo.lens._sdk.exporters.health.ExportHealth`, and decides which
exporter a forked child may use: a new one of its own (with a *factory*), its copy
of the parent's, or none (an exporter that is not usable after ``fork``, such as
OTLP over gRPC, whose calls are also kept out of the instant of a fork). The
metric, log and span wrappers below are thin: they clean what they forward and
say which result means success. The batching span processor exports through a
:class:`ReportingSpanExporter` too.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import Any, Generic, Protocol, TypeVar

from opentelemetry.sdk._logs import ReadableLogRecord
from opentelemetry.sdk._logs.export import LogRecordExporter, LogRecordExportResult
from opentelemetry.sdk.metrics.export import MetricExporter, MetricExportResult, MetricsData
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from nemo.lens._core import fork as _fork
from nemo.lens._core.sanitize import safe_str
from nemo.lens._sdk.exporters.health import (
    ExportHealth,
    announce_not_after_fork,
    describe_destination,
)
from nemo.lens._sdk.exporters.quiet import last_cause, quiet
from nemo.lens._sdk.exporters.redaction import clean_log_record, clean_metrics_data

__all__ = [
    "Forwarder",
    "ReportingLogExporter",
    "ReportingMetricExporter",
    "ReportingSpanExporter",
]

_E = TypeVar("_E")
_R = TypeVar("_R")


class Forwarder(Generic[_E]):
    """What the metric, log and span wrappers share: quiet forwarding, failure reports,
    and which exporter a forked child may use.

    With a *factory*, a forked child exports through a new exporter of its own
    instead of its copy of the parent's (whose connection the parent uses). With
    *in_export_thread* (the export thread of
    :class:`~nemo.lens._sdk.batching.BatchingSpanProcessor`) even ``SystemExit``
    from an exporter is counted, since it would end the thread, where in the job's
    own thread a ``KeyboardInterrupt`` must still reach the job.
    """

    _signal: str
    inner: _E
    _catches: tuple[type[BaseException], ...] = (Exception,)
    """What a failed export may raise and still be counted rather than propagated."""

    def __init__(
        self,
        inner: _E,
        health: ExportHealth,
        *,
        quiet_loggers: Sequence[str] = (),
        factory: Callable[[], _E] | None = None,
        usable_after_fork: bool = True,
        in_export_thread: bool = False,
    ) -> None:
        self._adopt(inner)
        self.inner = inner
        self._health = health
        self._quiet = tuple(quiet_loggers)
        self._destination = describe_destination(inner)
        health.serves(self._signal, self._destination)
        self._factory = factory
        self._usable_after_fork = usable_after_fork
        self._inherited = False
        self._disabled = False
        self._shut_down = False
        if in_export_thread:
            self._catches = (BaseException,)
        if factory is not None or not usable_after_fork:
            _fork.register(self)

    def _adopt(self, inner: _E) -> None:
        """Take on what the exporter interface needs of *inner* (nothing by default)."""

    def _before_fork_in_parent(self) -> None:
        if not self._usable_after_fork:
            announce_not_after_fork(self._destination)

    def _after_fork_in_child(self) -> None:
        self._inherited = True
        self._disabled = not self._usable_after_fork

    def _warn(self, cause: str) -> None:
        self._health.attempt_failed(self._signal, self._destination, cause)

    def _own_inner(self) -> _E:
        if self._inherited and self._factory is not None:
            self._inherited = False
            self.inner = self._factory()
        return self.inner

    def _forward(self, items: int, send: Callable[[_E], _R], success: _R, failure: _R) -> _R:
        """Send through *inner*; a failure or exception is counted, not raised."""
        if self._disabled:  # a forked child that must not touch the exporter
            return failure
        cause: str | None = None
        gate = contextlib.nullcontext() if self._usable_after_fork else _fork.fork_unsafe()
        with gate, quiet(self._quiet, on_warning=self._warn):
            try:
                result = send(self._own_inner())
            except self._catches as exc:
                result = failure
                cause = f"{type(exc).__name__}: {safe_str(exc)}"
            cause = cause or last_cause()
        if result is success:
            self._health.export_succeeded(self._signal, self._destination)
        else:
            # Once shut down, the exporter refuses what a shutdown that did not wait
            # still sends it (a batch in flight at a timeout of 0 or less): the items are
            # counted as lost, but the destination did not fail; no warning says it did.
            self._health.export_failed(
                self._signal, items, self._destination, cause, warn=not self._shut_down
            )
        return result

    def _flush_inner(self, flush: Callable[[], bool]) -> bool:
        """Run *inner*'s flush quietly; a copy inherited from the parent is not flushed."""
        if self._inherited:
            return True
        with quiet(self._quiet):
            return flush()

    def _shut_inner_down(self, shutdown: Callable[[], object]) -> None:
        """Run *inner*'s shutdown quietly; a copy inherited from the parent is left alone."""
        if self._inherited:
            return
        self._shut_down = True
        with quiet(self._quiet):
            shutdown()


class ReportingMetricExporter(Forwarder[MetricExporter], MetricExporter):
    """Forwards to *inner*, quietly, and reports failures to an :class:`ExportHealth`."""

    _signal = "metrics"

    def _adopt(self, inner: MetricExporter) -> None:
        # The reader asks the exporter it was given which temporality and aggregation to use.
        MetricExporter.__init__(
            self,
            preferred_temporality=inner._preferred_temporality,
            preferred_aggregation=inner._preferred_aggregation,
        )

    def export(
        self, metrics_data: MetricsData, timeout_millis: float = 10_000, **kwargs: Any
    ) -> MetricExportResult:
        """Export through *inner*, attributes redacted and made exportable
        (:func:`~nemo.lens._sdk.exporters.redaction.clean_metrics_data`); a failure or
        exception is counted, not raised."""
        changes: dict[str, int] = {}
        cleaned = clean_metrics_data(metrics_data, changes)
        self._health.changed(changes)
        return self._forward(
            1,
            lambda inner: inner.export(cleaned, timeout_millis=timeout_millis, **kwargs),
            MetricExportResult.SUCCESS,
            MetricExportResult.FAILURE,
        )

    def force_flush(self, timeout_millis: float = 10_000) -> bool:
        """Flush *inner* (not a copy inherited from the parent process)."""
        return self._flush_inner(lambda: self.inner.force_flush(timeout_millis=timeout_millis))

    def shutdown(self, timeout_millis: float = 30_000, **kwargs: Any) -> None:
        """Shut *inner* down (not a copy inherited from the parent process)."""
        self._shut_inner_down(lambda: self.inner.shutdown(timeout_millis=timeout_millis, **kwargs))


class _BatchExporter(Protocol):
    """What the span and log exporter interfaces share: flush and shutdown take the same."""

    def force_flush(self, timeout_millis: int = 30000) -> bool: ...

    def shutdown(self) -> None: ...


_B = TypeVar("_B", bound=_BatchExporter)


class _BatchForwarder(Forwarder[_B]):
    """The span and log wrappers' flush and shutdown."""

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Flush *inner* (not a copy inherited from the parent process)."""
        return self._flush_inner(lambda: self.inner.force_flush(timeout_millis))

    def shutdown(self) -> None:
        """Shut *inner* down (not a copy inherited from the parent process)."""
        self._shut_inner_down(self.inner.shutdown)


class ReportingLogExporter(_BatchForwarder[LogRecordExporter], LogRecordExporter):
    """Forwards to *inner*, quietly, and reports failures to an :class:`ExportHealth`."""

    _signal = "logs"

    def export(self, batch: Sequence[ReadableLogRecord]) -> LogRecordExportResult:
        """Export through *inner*, attributes redacted and made exportable
        (:func:`~nemo.lens._sdk.exporters.redaction.clean_log_record`); a failure or
        exception is counted, not raised."""
        changes: dict[str, int] = {}
        cleaned = [clean_log_record(record, changes) for record in batch]
        self._health.changed(changes)
        return self._forward(
            len(cleaned),
            lambda inner: inner.export(cleaned),
            LogRecordExportResult.SUCCESS,
            LogRecordExportResult.FAILURE,
        )


class ReportingSpanExporter(_BatchForwarder[SpanExporter], SpanExporter):
    """Forwards to *inner*, quietly, and reports failures to an :class:`ExportHealth`.

    Span exporters nemo.lens calls synchronously, from the thread that ends each
    span (``console``, the SDK's in-memory exporter), report this way: a console
    whose reader went away fails every span, and the report is one warning and a
    count, not a traceback per span. So do batched ones, from the export thread of
    :class:`~nemo.lens._sdk.batching.BatchingSpanProcessor` (*in_export_thread*).
    """

    _signal = "traces"

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        """Export through *inner*; a failure or exception is counted, not raised."""
        return self._forward(
            len(spans),
            lambda inner: inner.export(spans),
            SpanExportResult.SUCCESS,
            SpanExportResult.FAILURE,
        )

    def export_open(self, spans: Sequence[ReadableSpan], at_ns: int) -> SpanExportResult:
        """Record spans still open through *inner*'s ``export_open`` (the ``file``
        exporter's open records), as :meth:`export` exports: a failure is reported, and
        counts no span as lost (each is exported when it ends)."""
        return self._forward(
            0,
            lambda inner: _records_open(inner).export_open(spans, at_ns),
            SpanExportResult.SUCCESS,
            SpanExportResult.FAILURE,
        )


class _OpenRecording(Protocol):
    def export_open(self, spans: Sequence[ReadableSpan], at_ns: int) -> SpanExportResult: ...


def _records_open(exporter: SpanExporter) -> _OpenRecording:
    # Only called for exporters that have it (the batching processor asks first).
    recording: _OpenRecording = exporter  # type: ignore[assignment]
    return recording
