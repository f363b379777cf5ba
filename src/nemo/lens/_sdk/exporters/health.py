"""One warning per outage, not one per batch: export failures counted and reported once.

When the collector is down, the SDK's OTLP exporters log every failed attempt
and every retry (a warning every second or two for as long as the outage
lasts), and the JSON-lines exporters log every batch a full disk refuses. In a
training job that buries the job's own output. nemo.lens reports instead:

* the **first** failure, as one warning naming the signal, the destination and
  the cause (the SDK's own message, captured);
* the **first** time telemetry is dropped (a full queue), as one warning;
* a **summary** at shutdown: how many spans, metric exports and log records were
  dropped or failed, so the loss is never silent;
* every suppressed attempt at ``DEBUG`` on the ``nemo.lens._sdk.exporters.health``
  logger, for whoever needs them.

The exporters' own log records are suppressed only while nemo.lens is calling
an exporter it created itself (a thread-local flag set around the call; see
:func:`quiet`), so an application's own OpenTelemetry exporters still log as
usual; for an OTLP exporter that includes its encoders and its transport
(urllib3 names request URLs, query and all). Credentials never reach these
messages: destinations are shown without user, password or query
(:func:`describe_destination`), and every quoted message goes through
:func:`nemo.lens._core.secrets.scrub`.
"""

from __future__ import annotations

import contextlib
import logging
import re
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, Final, Generic, TypeVar
from urllib.parse import urlsplit, urlunsplit

from opentelemetry.sdk._logs import ReadableLogRecord
from opentelemetry.sdk._logs.export import LogRecordExporter, LogRecordExportResult
from opentelemetry.sdk.metrics.export import MetricExporter, MetricExportResult, MetricsData
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from nemo.lens._core import fork as _fork
from nemo.lens._core.redaction import dropped_attribute_values
from nemo.lens._core.sanitize import DROPPED_AT_THE_DOOR, REASONS, safe_str
from nemo.lens._core.secrets import add_secret, scrub, scrub_url
from nemo.lens._sdk.exporters.redaction import clean_log_record, clean_metrics_data

__all__ = [
    "ExportHealth",
    "ReportingLogExporter",
    "ReportingMetricExporter",
    "ReportingSpanExporter",
    "Tally",
    "add_secret",
    "announce_not_after_fork",
    "describe_destination",
    "exporter_loggers",
    "last_cause",
    "quiet",
    "scrub",
]

# The logger keeps the name users configure it by (this code's module before it moved).
_logger = logging.getLogger("nemo.lens.exporters.health")

_CAUSE_LIMIT: Final = 300
"""Longest captured cause quoted in a warning (gRPC error details can be long)."""


class Tally:
    """A counter that threads can add to without a lock and without losing counts.

    Each thread adds to its own slot (``dict`` item assignment is atomic), so the
    hot path never blocks -- not even when a signal handler interrupts a thread
    in the middle of an update and then needs the same counter.
    """

    def __init__(self) -> None:
        self._slots: dict[int, int] = {}

    def add(self, amount: int = 1) -> None:
        """Add *amount* (from the calling thread)."""
        ident = threading.get_ident()
        self._slots[ident] = self._slots.get(ident, 0) + amount

    @property
    def value(self) -> int:
        """The total so far."""
        return sum(list(self._slots.values()))


# -- suppressing the exporters' own records -------------------------------------------

_local = threading.local()


def _quieted() -> frozenset[str]:
    """The loggers this thread's innermost :func:`quiet` block silences."""
    names: frozenset[str] = getattr(_local, "quieted", frozenset())
    return names


class _QuietFilter(logging.Filter):
    """Drops records logged while nemo.lens calls one of its own exporters.

    The first warning dropped in a call is kept (per thread) as the cause to
    quote in the first-failure warning, and every dropped record is re-logged
    at DEBUG.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        if record.name not in _quieted():
            return True
        try:
            message = record.getMessage()
        except Exception:  # a malformed record must not break the exporter thread
            message = str(record.msg)
        if record.exc_info and record.exc_info[1] is not None:
            error = record.exc_info[1]
            message = f"{message} ({type(error).__name__}: {error})"
        message = scrub(message)
        # The first warning of a call names the cause ("Connection refused");
        # later ones tend to be about giving up ("Shutdown in progress").
        if getattr(_local, "cause", None) is None or (
            record.levelno >= logging.WARNING
            and getattr(_local, "cause_level", 0) < logging.WARNING
        ):
            _local.cause = message
            _local.cause_level = record.levelno
        _logger.debug("suppressed %s %s: %s", record.name, record.levelname, message)
        # A retrying exporter warns long before it gives up: report the outage now.
        on_warning = getattr(_local, "on_warning", None)
        if on_warning is not None and record.levelno >= logging.WARNING:
            on_warning(message)
        return False


_FILTER: Final = _QuietFilter()
# Modules whose loggers report export failures: OpenTelemetry's exporters and
# nemo.lens's JSON-lines writers (never this module: its own warnings must pass).
_EXPORTER_MODULES: Final = ("opentelemetry.exporter.", "nemo.lens._sdk.exporters.jsonl")
# nemo.lens's exporters log under the names they had before moving into _sdk.
_OWN_PREFIX: Final = "nemo.lens._sdk.exporters."
_OWN_LOGGERS: Final = "nemo.lens.exporters."
# Loggers an OTLP exporter's work logs to besides its own module: the shared
# encoders (a traceback per value they cannot encode) and, per transport, the
# HTTP client (which names the request URL, query and all) or gRPC.
_OTLP_SUPPORT_LOGGERS: Final = (
    "opentelemetry.exporter.otlp.proto.common._internal",
    "opentelemetry.exporter.otlp.proto.common._internal.metrics_encoder",
    "opentelemetry.exporter.otlp.proto.common._internal.trace_encoder",
    "opentelemetry.exporter.otlp.common._aggregation",
)
_TRANSPORT_LOGGERS: Final[Mapping[str, tuple[str, ...]]] = {
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
_installed: set[str] = set()
_install_lock = threading.Lock()


def exporter_loggers(exporter: object) -> tuple[str, ...]:
    """The loggers an exporter of this class logs its failures to.

    Loggers are named after modules, so these are the modules of the classes in
    the exporter's hierarchy that belong to OpenTelemetry's exporters or to
    nemo.lens's JSON-lines exporters (the gRPC exporters log from their shared
    base module). Wrappers
    that keep the real exporter in ``inner`` are looked through.
    """
    names: set[str] = set()
    current: object | None = exporter
    while current is not None:
        names.update(
            cls.__module__.replace(_OWN_PREFIX, _OWN_LOGGERS, 1)
            for cls in type(current).__mro__
            if cls.__module__.startswith(_EXPORTER_MODULES)
        )
        inner = getattr(current, "inner", None)
        current = inner if inner is not current else None
    for prefix, loggers in _TRANSPORT_LOGGERS.items():
        if any(name.startswith(prefix) for name in names):
            names.update(_OTLP_SUPPORT_LOGGERS, loggers)
    return tuple(sorted(names))


@contextmanager
def quiet(
    loggers: Iterable[str], on_warning: Callable[[str], None] | None = None
) -> Iterator[None]:
    """Suppress records of *loggers* logged by this thread inside the block.

    The filter is installed on each logger once and passes everything through
    outside such blocks. Forgets the captured cause on entry (see
    :func:`last_cause`). *on_warning* is called with the text of each suppressed
    record of level WARNING or above, as it happens.
    """
    loggers = tuple(loggers)
    for name in loggers:
        if name not in _installed:
            with _install_lock:
                if name not in _installed:
                    logging.getLogger(name).addFilter(_FILTER)
                    _installed.add(name)
    _local.cause = None
    _local.cause_level = 0
    names = frozenset(loggers)
    outer_hook, outer_names = getattr(_local, "on_warning", None), _quieted()
    _local.on_warning, _local.quieted = on_warning, names
    try:
        yield
    finally:
        _local.on_warning, _local.quieted = outer_hook, outer_names


def last_cause() -> str | None:
    """The first warning (else the first record) suppressed by this thread's last
    :func:`quiet` block, if any."""
    message: str | None = getattr(_local, "cause", None)
    return message


# -- destinations -----------------------------------------------------------------------


def describe_destination(exporter: object) -> str:
    """Where *exporter* sends data, safe to log: no user, password, query or fragment.

    Wrappers that keep the real exporter in ``inner`` are looked through.
    """
    inner = getattr(exporter, "inner", None)
    if inner is not None and inner is not exporter:
        return describe_destination(inner)
    endpoint = getattr(exporter, "_endpoint", None)
    if isinstance(endpoint, str) and endpoint:
        return _strip_credentials(endpoint)
    sink = getattr(exporter, "sink", None)
    path = getattr(sink, "path", None)
    if isinstance(path, str):
        return path
    if sink is not None:
        return "standard output"
    return type(exporter).__name__


def _strip_credentials(endpoint: str) -> str:
    try:
        parts = urlsplit(endpoint)
    except ValueError:
        return "the configured endpoint"
    if not parts.scheme or not parts.netloc:
        # gRPC endpoints are often host:port; anything with an "@" may carry a password.
        return scrub_url(endpoint).rpartition("@")[2]
    host = parts.hostname or ""
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    netloc = f"{host}:{port}" if port is not None else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def _hint(destination: str) -> str:
    """What to look at first when export to *destination* fails."""
    if destination == "standard output":
        return "Was standard output closed (a pipe whose reader exited)?"
    if "://" in destination or re.fullmatch(r"\[?[\w.:-]+\]?:\d+", destination):
        return "Is the collector running and reachable?"
    if "/" in destination or destination.endswith(".jsonl"):
        return "Is the file system full, read-only or unavailable?"
    return "Is the exporter's destination reachable?"


# -- the report --------------------------------------------------------------------------

_UNITS: Final[Mapping[str, str]] = {
    "traces": "span(s)",
    "metrics": "metric export(s)",
    "logs": "log record(s)",
}


class ExportHealth:
    """Failure and drop accounting for one process's telemetry pipeline.

    Exporters and processors report here; the first failure and the first drop
    are logged as warnings, recoveries at INFO, everything else at DEBUG, and
    :meth:`summary` says at shutdown what was lost. Safe to call from any thread.
    """

    def __init__(self) -> None:
        self._reset()
        _fork.register(self)

    def _reset(self) -> None:
        self._failed: dict[str, Tally] = {}
        self._dropped: dict[tuple[str, str], Tally] = {}
        self._destinations: dict[str, str] = {}
        self._failing: set[str] = set()
        self._changed: dict[str, Tally] = {}
        # Values the primitives dropped before the SDK saw them are counted in
        # nemo.lens.helpers for the whole process; this pipeline reports its share.
        self._door_baseline = dropped_attribute_values()
        # Acquired without blocking and never released: exactly one caller wins.
        self._failure_warned = threading.Lock()
        self._drop_warned: dict[str, threading.Lock] = {}
        self._change_warned = threading.Lock()

    def _after_fork_in_child(self) -> None:
        # A forked child reports its own losses, not a copy of its parent's.
        self._reset()

    def _failed_tally(self, signal: str) -> Tally:
        tally = self._failed.get(signal)
        if tally is None:
            tally = self._failed.setdefault(signal, Tally())
        return tally

    def export_failed(self, signal: str, items: int, destination: str, cause: str | None) -> None:
        """Record that *items* of *signal* could not be exported to *destination*."""
        self._failed_tally(signal).add(items)
        self._destinations[signal] = destination
        self._failing.add(signal)
        if not self.attempt_failed(signal, destination, cause):
            _logger.debug("nemo.lens: exporting %d %s to %s failed", items, signal, destination)

    def attempt_failed(self, signal: str, destination: str, cause: str | None) -> bool:
        """Report that exporting *signal* to *destination* is failing (the exporter
        may still be retrying); only the first report in the process is logged.
        Returns whether this one was."""
        self._failing.add(signal)
        shown = scrub((cause or "no details").strip())
        if len(shown) > _CAUSE_LIMIT:
            shown = shown[:_CAUSE_LIMIT] + "..."
        if self._failure_warned.acquire(blocking=False):
            _logger.warning(
                "nemo.lens: cannot export %s to %s (%s). The job is not affected; nemo.lens "
                "keeps trying, reports further failures only at DEBUG on logger %r and says "
                "at shutdown how much telemetry was lost. %s",
                signal,
                destination,
                shown,
                _logger.name,
                _hint(destination),
            )
            return True
        return False

    def export_succeeded(self, signal: str, destination: str) -> None:
        """Record a successful export; logs a recovery once after failures."""
        if signal in self._failing:
            self._failing.discard(signal)
            _logger.info("nemo.lens: exporting %s to %s works again", signal, destination)

    def dropped(self, signal: str, items: int, reason: str, explanation: str) -> None:
        """Record that *items* of *signal* were dropped for *reason* (a short phrase).

        *explanation* is logged as a warning the first time anything is dropped
        for that reason.
        """
        key = (signal, reason)
        tally = self._dropped.get(key)
        if tally is None:
            tally = self._dropped.setdefault(key, Tally())
        tally.add(items)
        warned = self._drop_warned.get(reason)
        if warned is None:
            warned = self._drop_warned.setdefault(reason, threading.Lock())
        if warned.acquire(blocking=False):
            _logger.warning("%s", explanation)

    def changed(self, changes: Mapping[str, int], explanation: str | None = None) -> None:
        """Record names and values that had to be changed to be exported, by reason.

        The first time, one warning says so (*explanation*, if given);
        :meth:`changes_summary` totals them.
        """
        if not changes:
            return
        for reason, count in changes.items():
            tally = self._changed.get(reason)
            if tally is None:
                tally = self._changed.setdefault(reason, Tally())
            tally.add(count)
        if self._change_warned.acquire(blocking=False):
            if explanation is None:
                explanation = (
                    f"nemo.lens: telemetry held values that no exporter can write as they are "
                    f"({next(iter(changes))}); they are exported changed rather than lost with "
                    "their batch. Changes are counted and reported at shutdown."
                )
            _logger.warning("%s", explanation)

    def changes(self) -> dict[str, int]:
        """How many names and values were changed or dropped to be exported, by reason
        (the reasons of :mod:`nemo.lens._core.sanitize`)."""
        totals = {reason: tally.value for reason, tally in list(self._changed.items())}
        totals[DROPPED_AT_THE_DOOR] = dropped_attribute_values() - self._door_baseline
        return {reason: totals[reason] for reason in REASONS if totals.get(reason)}

    def changes_summary(self) -> str | None:
        """One line totalling :meth:`changes`, or ``None`` when nothing was changed."""
        totals = self.changes()
        if not totals:
            return None
        parts = [f"{count} {reason}" for reason, count in totals.items()]
        return "nemo.lens: telemetry exported with changes: " + "; ".join(parts)

    def lost_total(self) -> int:
        """How many items of every signal were lost so far (failed plus dropped)."""
        return sum(self.lost().values())

    def lost(self) -> dict[str, int]:
        """How many items each signal lost so far (failed plus dropped)."""
        totals: dict[str, int] = {}
        for signal, tally in list(self._failed.items()):
            totals[signal] = totals.get(signal, 0) + tally.value
        for (signal, _), tally in list(self._dropped.items()):
            totals[signal] = totals.get(signal, 0) + tally.value
        return {signal: count for signal, count in totals.items() if count}

    def summary(self, pending: Mapping[str, int] | None = None) -> str | None:
        """One line saying what was lost, or ``None`` when nothing was.

        *pending* counts items still queued when shutdown gave up waiting (they
        are lost too when the process exits).
        """
        parts: list[str] = []
        for (signal, reason), tally in sorted(self._dropped.items()):
            if tally.value:
                parts.append(f"{tally.value} {_UNITS.get(signal, signal)} dropped ({reason})")
        for signal, tally in sorted(self._failed.items()):
            if tally.value:
                destination = self._destinations.get(signal, "the destination")
                parts.append(
                    f"{tally.value} {_UNITS.get(signal, signal)} failed to export to {destination}"
                )
        for signal, count in sorted((pending or {}).items()):
            if count:
                parts.append(
                    f"{count} {_UNITS.get(signal, signal)} still queued when shutdown timed out"
                )
        if not parts:
            return None
        return "nemo.lens: telemetry this process could not deliver: " + "; ".join(parts)


# -- fork -----------------------------------------------------------------------------------

_fork_warned = threading.Lock()


def announce_not_after_fork(destination: str) -> None:
    """Say once per process, as it forks, that its children will not export to *destination*.

    For exporters that cannot be used at all in a forked child (OTLP over gRPC:
    gRPC is not fork-safe while another thread is calling into it, and a child
    that uses it can hang or crash). Said by the parent, once, rather than by
    every data-loader worker of every epoch.
    """
    if _fork_warned.acquire(blocking=False):
        _logger.warning(
            "nemo.lens: this process forked; its children do not export telemetry to %s "
            "because OTLP over gRPC cannot be used safely after fork (the child can hang or "
            "crash). To trace forked workers, set OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf "
            "or NEMO_LENS_EXPORTER=file.",
            destination,
        )


# -- wrappers for the SDK-driven signals ------------------------------------------------------


_E = TypeVar("_E")
_R = TypeVar("_R")


class _Forwarder(Generic[_E]):
    """What the metric and log wrappers share: quiet forwarding, failure reports, and
    which exporter a forked child may use.

    With a *factory*, a forked child exports through a new exporter of its own
    instead of its copy of the parent's (whose connection the parent uses).
    """

    _signal: str
    inner: _E

    def _setup(
        self,
        inner: _E,
        health: ExportHealth,
        quiet_loggers: Sequence[str],
        factory: Callable[[], _E] | None,
        usable_after_fork: bool,
    ) -> None:
        self.inner = inner
        self._health = health
        self._quiet = tuple(quiet_loggers)
        self._destination = describe_destination(inner)
        self._factory = factory
        self._usable_after_fork = usable_after_fork
        self._inherited = False
        self._disabled = False
        if factory is not None or not usable_after_fork:
            _fork.register(self)

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
            except Exception as exc:
                result = failure
                cause = f"{type(exc).__name__}: {safe_str(exc)}"
            cause = cause or last_cause()
        if result is success:
            self._health.export_succeeded(self._signal, self._destination)
        else:
            self._health.export_failed(self._signal, items, self._destination, cause)
        return result


class ReportingMetricExporter(_Forwarder[MetricExporter], MetricExporter):
    """Forwards to *inner*, quietly, and reports failures to an :class:`ExportHealth`."""

    _signal = "metrics"

    def __init__(
        self,
        inner: MetricExporter,
        health: ExportHealth,
        *,
        quiet_loggers: Sequence[str] = (),
        factory: Callable[[], MetricExporter] | None = None,
        usable_after_fork: bool = True,
    ) -> None:
        MetricExporter.__init__(
            self,
            preferred_temporality=inner._preferred_temporality,
            preferred_aggregation=inner._preferred_aggregation,
        )
        self._setup(inner, health, quiet_loggers, factory, usable_after_fork)

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
        if self._inherited:
            return True
        with quiet(self._quiet):
            return self.inner.force_flush(timeout_millis=timeout_millis)

    def shutdown(self, timeout_millis: float = 30_000, **kwargs: Any) -> None:
        """Shut *inner* down (not a copy inherited from the parent process)."""
        if self._inherited:
            return
        with quiet(self._quiet):
            self.inner.shutdown(timeout_millis=timeout_millis, **kwargs)


class ReportingLogExporter(_Forwarder[LogRecordExporter], LogRecordExporter):
    """Forwards to *inner*, quietly, and reports failures to an :class:`ExportHealth`."""

    _signal = "logs"

    def __init__(
        self,
        inner: LogRecordExporter,
        health: ExportHealth,
        *,
        quiet_loggers: Sequence[str] = (),
        factory: Callable[[], LogRecordExporter] | None = None,
        usable_after_fork: bool = True,
    ) -> None:
        self._setup(inner, health, quiet_loggers, factory, usable_after_fork)

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

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Flush *inner* (not a copy inherited from the parent process)."""
        if self._inherited:
            return True
        with quiet(self._quiet):
            return self.inner.force_flush(timeout_millis)

    def shutdown(self) -> None:
        """Shut *inner* down (not a copy inherited from the parent process)."""
        if self._inherited:
            return
        # The SDK declares LogRecordExporter.shutdown without annotations.
        shutdown: Callable[[], object] = self.inner.shutdown
        with quiet(self._quiet):
            shutdown()


class ReportingSpanExporter(_Forwarder[SpanExporter], SpanExporter):
    """Forwards to *inner*, quietly, and reports failures to an :class:`ExportHealth`.

    For span exporters nemo.lens calls synchronously, from the thread that ends
    each span (``console``, the SDK's in-memory exporter): a console whose
    reader went away fails every span, and the report is one warning and a
    count, not a traceback per span. (Batched span exporters report through
    :class:`~nemo.lens._sdk.batching.BatchingSpanProcessor` instead.)
    """

    _signal = "traces"

    def __init__(
        self,
        inner: SpanExporter,
        health: ExportHealth,
        *,
        quiet_loggers: Sequence[str] = (),
    ) -> None:
        self._setup(inner, health, quiet_loggers, None, True)

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        """Export through *inner*; a failure or exception is counted, not raised."""
        return self._forward(
            len(spans),
            lambda inner: inner.export(spans),
            SpanExportResult.SUCCESS,
            SpanExportResult.FAILURE,
        )

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Flush *inner*."""
        with quiet(self._quiet):
            return self.inner.force_flush(timeout_millis)

    def shutdown(self) -> None:
        """Shut *inner* down."""
        with quiet(self._quiet):
            self.inner.shutdown()
