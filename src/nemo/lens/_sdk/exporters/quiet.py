"""Suppress an exporter's own log records while nemo.lens calls it, and keep its first cause.

When the collector is down, the SDK's OTLP exporters log every failed attempt
and every retry (a warning every second or two for as long as the outage
lasts), and the JSON-lines exporters log every batch a full disk refuses. The
exporters' own records are suppressed only while nemo.lens is calling an
exporter it created itself (a thread-local flag set around the call; see
:func:`quiet`), so an application's own OpenTelemetry exporters still log as
usual; for an OTLP exporter that includes its encoders and its transport
(urllib3 names request URLs, query and all). What was suppressed is re-logged at
``DEBUG`` on the ``nemo.lens.exporters.health`` logger, and the first warning's
message is kept as the failure's cause (:func:`last_cause`), scrubbed of secrets.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Final

from nemo.lens._core.secrets import scrub

__all__ = ["exporter_loggers", "last_cause", "quiet"]

_logger = logging.getLogger("nemo.lens.exporters.health")


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
