"""The one guard every call nemo.lens makes into an exporter goes through: it cleans what it
forwards, suppresses instrumentation, quiets the failure logs of exporters nemo.lens made,
counts a failure instead of raising it, and decides what a forked child may use (the
steps: ``docs/architecture.md``, the export path).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Final, Generic, TypeVar

from opentelemetry.context import _SUPPRESS_INSTRUMENTATION_KEY, attach, detach, set_value
from opentelemetry.sdk._logs import ReadableLogRecord
from opentelemetry.sdk._logs.export import LogRecordExporter, LogRecordExportResult
from opentelemetry.sdk.metrics.export import MetricExporter, MetricExportResult, MetricsData
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from nemo.lens._core import fork as _fork
from nemo.lens._core.destinations import Signal, otlp_protocol
from nemo.lens._core.sanitize import safe_str
from nemo.lens._core.secrets import scrub
from nemo.lens._sdk.exporters.encoding import span_lines
from nemo.lens._sdk.exporters.factory import create_exporter, is_otlp_span_exporter
from nemo.lens._sdk.exporters.health import ExportHealth, describe_destination
from nemo.lens._sdk.exporters.redaction import (
    Changes,
    clean_log_record,
    clean_metrics_data,
    clean_span,
)
from nemo.lens._sdk.recording import RecordingSpan

__all__ = ["LogGuard", "MetricGuard", "SpanGuard"]

_logger = logging.getLogger("nemo.lens.exporters.health")

# What nemo.lens's exporters and OpenTelemetry's log their failures to, by module: the
# exporters' own, the shared OTLP encoders (a traceback per value they cannot encode) and,
# per transport, the HTTP client (which names the request URL, query and all) or gRPC.
_EXPORTER_MODULES: Final = ("opentelemetry.exporter.", "nemo.lens._sdk.exporters.jsonl")
_OTLP_SUPPORT_LOGGERS: Final = (
    "opentelemetry.exporter.otlp.proto.common._internal",
    "opentelemetry.exporter.otlp.proto.common._internal.metrics_encoder",
    "opentelemetry.exporter.otlp.proto.common._internal.trace_encoder",
    "opentelemetry.exporter.otlp.common._aggregation",
)
_TRANSPORT_LOGGERS: Final = {
    "opentelemetry.exporter.otlp.proto.http": (
        "opentelemetry.exporter.otlp.proto.http._common",
        "opentelemetry.exporter.otlp.common.http",
        "opentelemetry.exporter.http.transport._requests",
        "opentelemetry.exporter.http.transport._urllib3",
        "urllib3.connectionpool",
        "urllib3.connection",
        "urllib3.util.retry",
        "urllib3.response",
    ),
    "opentelemetry.exporter.otlp.proto.grpc": (
        "opentelemetry.exporter.otlp.proto.grpc.exporter",
        "grpc._channel",
        "grpc._common",
        "grpc._plugin_wrapping",
    ),
}


def _quiet_loggers(exporter: object) -> frozenset[str]:
    # By the modules of its classes; nemo.lens's under their names before the move to _sdk.
    names = {
        cls.__module__.replace("nemo.lens._sdk.exporters.", "nemo.lens.exporters.", 1)
        for cls in type(exporter).__mro__
        if cls.__module__.startswith(_EXPORTER_MODULES)
    }
    for prefix, loggers in _TRANSPORT_LOGGERS.items():
        if any(name.startswith(prefix) for name in names):
            names.update(_OTLP_SUPPORT_LOGGERS, loggers)
    return frozenset(names)


class _Call:
    # What the quiet filter knows of the export this thread is making.

    __slots__ = ("cause", "level", "loggers", "on_warning")

    def __init__(self, loggers: frozenset[str], on_warning: Callable[[str], None] | None) -> None:
        self.loggers = loggers
        self.on_warning = on_warning
        self.cause: str | None = None
        self.level = 0


_local = threading.local()


class _QuietFilter(logging.Filter):
    # Drops what a quieted logger logs inside a guarded call of this thread: repeated at
    # DEBUG, the first warning kept as the failure's cause and reported at once.

    def filter(self, record: logging.LogRecord) -> bool:
        call: _Call | None = getattr(_local, "call", None)
        if call is None or record.name not in call.loggers:
            return True
        try:
            message = record.getMessage()
        except Exception:  # a malformed record must not break the export
            message = str(record.msg)
        if record.exc_info and record.exc_info[1] is not None:
            error = record.exc_info[1]
            message = f"{message} ({type(error).__name__}: {error})"
        message = scrub(message)
        # The first warning names the cause ("Connection refused"); later ones tend to be
        # about giving up ("Shutdown in progress").
        if call.cause is None or (record.levelno >= logging.WARNING > call.level):
            call.cause, call.level = message, record.levelno
        _logger.debug("suppressed %s %s: %s", record.name, record.levelname, message)
        if call.on_warning is not None and record.levelno >= logging.WARNING:
            call.on_warning(message)  # a retrying exporter warns long before it gives up
        return False


_FILTER: Final = _QuietFilter()

_E = TypeVar("_E")
_R = TypeVar("_R")
_B = TypeVar("_B", SpanExporter, LogRecordExporter)


class _Guard(Generic[_E]):
    """What the span, metric and log guards share. *name*: the exporter's when nemo.lens
    made it (``None``: the caller's, its logs untouched). *in_export_thread*: even
    ``SystemExit`` is counted, since it would end the export thread."""

    _signal: Signal
    inner: _E

    def __init__(
        self,
        inner: _E,
        health: ExportHealth,
        *,
        name: str | None = None,
        in_export_thread: bool = False,
    ) -> None:
        self.inner = inner
        self._health = health
        self._destination = describe_destination(inner)
        health.serves(self._signal, self._destination)
        self._catches: tuple[type[BaseException], ...] = (
            (BaseException,) if in_export_thread else (Exception,)
        )
        self._quiet = _quiet_loggers(inner) if name is not None else frozenset()
        # Installed here, in set-up's thread, once: the export path takes no lock for it.
        for logger in self._quiet:
            logging.getLogger(logger).addFilter(_FILTER)
        otlp = name == "otlp"
        self.usable_after_fork = not (otlp and otlp_protocol(self._signal) == "grpc")
        self._own_after_fork = otlp and self.usable_after_fork
        self._inherited = self._disabled = self._shut_down = False
        _fork.register(self)

    def _before_fork_in_parent(self) -> None:
        if not self.usable_after_fork:
            self._health.not_after_fork(self._destination)

    def _after_fork_in_child(self) -> None:
        self._inherited = True
        self._disabled = not self.usable_after_fork

    def _own_inner(self) -> _E:
        if self._inherited and self._own_after_fork:
            # OTLP/HTTP: the copy's keep-alive connection is the parent's.
            self._inherited = False
            self.inner = create_exporter(self._signal, "otlp")
        return self.inner

    @contextmanager
    def _guarded(self, on_warning: Callable[[str], None] | None = None) -> Iterator[_Call]:
        # Instrumentation suppressed, as the SDK's processors export: HTTP client
        # instrumentation must not trace the exporter's own requests.
        token = attach(set_value(_SUPPRESS_INSTRUMENTATION_KEY, True))
        outer = getattr(_local, "call", None)
        _local.call = call = _Call(self._quiet, on_warning)
        try:
            if self.usable_after_fork:
                yield call
            else:
                with _fork.fork_unsafe():
                    yield call
        finally:
            _local.call = outer
            detach(token)

    def _warn(self, cause: str) -> None:
        self._health.attempt_failed(self._signal, self._destination, cause)

    def _forward(
        self, items: int, send: Callable[[_E, Changes], _R], success: _R, failure: _R
    ) -> _R:
        # Send through inner, cleaned; a failure or exception is counted, not raised.
        if self._disabled:  # a forked child that must not touch the exporter
            return failure
        cause: str | None = None
        changes: Changes = {}
        with self._guarded(self._warn) as call:
            try:
                result = send(self._own_inner(), changes)
            except self._catches as exc:
                result, cause = failure, f"{type(exc).__name__}: {safe_str(exc)}"
        if result is success:
            self._health.export_succeeded(self._signal, self._destination)
        else:
            # Once shut down, the exporter refuses what a shutdown that did not wait still
            # sends it: counted as lost, but the destination did not fail.
            self._health.export_failed(
                self._signal,
                items,
                self._destination,
                cause or call.cause,
                warn=not self._shut_down,
            )
        self._health.changed(changes)
        return result

    def _flush(self, flush: Callable[[], bool]) -> bool:
        if self._inherited:  # the parent's, whose queue the parent flushes
            return True
        with self._guarded():
            return flush()

    def _shutdown(self, shutdown: Callable[[], object]) -> None:
        if self._inherited:
            return
        self._shut_down = True
        with self._guarded():
            shutdown()


class _BatchGuard(_Guard[_B]):
    # The span and log guards' flush and shutdown (their interfaces agree on both).

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self._flush(lambda: self.inner.force_flush(timeout_millis))

    def shutdown(self) -> None:
        self._shutdown(self.inner.shutdown)


class SpanGuard(_BatchGuard[SpanExporter], SpanExporter):
    """Guards a span exporter. An exporter of lines gets them written by the one encoder,
    OpenTelemetry's OTLP exporters get recorded spans as they are (their encoder reads
    only a finished span's public fields), any other the SDK's ``ReadableSpan``."""

    _signal = "traces"

    def __init__(self, inner: SpanExporter, health: ExportHealth, **options: Any) -> None:
        super().__init__(inner, health, **options)
        self._lines = hasattr(inner, "export_lines")
        self._as_is = is_otlp_span_exporter(inner)

    def cleaned(
        self, spans: Sequence[ReadableSpan | RecordingSpan], changes: Changes
    ) -> list[ReadableSpan]:
        """*spans* as an *inner* without ``export_lines`` receives them."""
        if self._as_is:  # a recorded span reads as a finished span
            return [clean_span(span, changes) for span in spans]  # type: ignore[arg-type]
        return [
            clean_span(span.readable() if isinstance(span, RecordingSpan) else span, changes)
            for span in spans
        ]

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        """Export the cleaned spans through *inner*; a failure is counted, not raised."""
        return self._forward(
            len(spans),
            lambda inner, changes: (
                inner.export_lines(span_lines(spans, inner.line_layout, changes))  # type: ignore[attr-defined]
                if self._lines
                else inner.export(self.cleaned(spans, changes))
            ),
            SpanExportResult.SUCCESS,
            SpanExportResult.FAILURE,
        )

    def export_open(self, spans: Sequence[ReadableSpan], at_ns: int) -> SpanExportResult:
        """Record spans still open at *at_ns* through *inner*'s ``export_open``, cleaned;
        a failure counts no span as lost (each is exported as it ends)."""
        return self._forward(
            0,
            lambda inner, changes: inner.export_open(  # type: ignore[attr-defined]
                [clean_span(span, changes) for span in spans], at_ns
            ),
            SpanExportResult.SUCCESS,
            SpanExportResult.FAILURE,
        )


class MetricGuard(_Guard[MetricExporter], MetricExporter):
    """Guards a metric exporter."""

    _signal = "metrics"

    def __init__(self, inner: MetricExporter, health: ExportHealth, **options: Any) -> None:
        # The reader asks its exporter which temporality and aggregation to use.
        MetricExporter.__init__(
            self,
            preferred_temporality=inner._preferred_temporality,
            preferred_aggregation=inner._preferred_aggregation,
        )
        super().__init__(inner, health, **options)

    def export(
        self, metrics_data: MetricsData, timeout_millis: float = 10_000, **kwargs: Any
    ) -> MetricExportResult:
        """Export through *inner*, cleaned; a failure is counted, not raised."""
        return self._forward(
            1,
            lambda inner, changes: inner.export(
                clean_metrics_data(metrics_data, changes), timeout_millis=timeout_millis, **kwargs
            ),
            MetricExportResult.SUCCESS,
            MetricExportResult.FAILURE,
        )

    def force_flush(self, timeout_millis: float = 10_000) -> bool:
        return self._flush(lambda: self.inner.force_flush(timeout_millis=timeout_millis))

    def shutdown(self, timeout_millis: float = 30_000, **kwargs: Any) -> None:
        self._shutdown(lambda: self.inner.shutdown(timeout_millis=timeout_millis, **kwargs))


class LogGuard(_BatchGuard[LogRecordExporter], LogRecordExporter):
    """Guards a log record exporter."""

    _signal = "logs"

    def export(self, batch: Sequence[ReadableLogRecord]) -> LogRecordExportResult:
        """Export through *inner*, cleaned; a failure is counted, not raised."""
        return self._forward(
            len(batch),
            lambda inner, changes: inner.export(
                [clean_log_record(record, changes) for record in batch]
            ),
            LogRecordExportResult.SUCCESS,
            LogRecordExportResult.FAILURE,
        )
