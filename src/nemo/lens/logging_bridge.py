"""Send standard-library ``logging`` records through nemo.lens's logger provider (opt-in).

:func:`setup_logging_bridge` (after ``setup_telemetry``, with ``logs_enabled``) attaches a
handler that emits each record as an OpenTelemetry log record, under the span current where
it was logged; :class:`TraceContextFilter` puts the trace ids into your own log lines.
Only the OpenTelemetry Logs API is used, not the SDK's deprecated ``LoggingHandler``.
"""

from __future__ import annotations

import contextvars
import logging
import sys
import threading
import time
import traceback
from typing import Final

from opentelemetry import _logs as otel_logs
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.util.types import AnyValue, AttributeValue

from nemo.lens import semconv as sc
from nemo.lens._core import state as _state
from nemo.lens._core.handle import TelemetryHandle
from nemo.lens._core.sanitize import safe_str

__all__ = [
    "LoggingBridgeHandler",
    "TraceContextFilter",
    "remove_logging_bridge",
    "setup_logging_bridge",
]

_logger = logging.getLogger(__name__)

_NO_ID: Final = "0"

# Whatever a record carries beyond these came from extra={...}. Read from a real record,
# so a field a later Python adds is not exported as an attribute.
_STANDARD_FIELDS: Final = frozenset(
    vars(logging.LogRecord("", logging.INFO, "", 0, "", None, None))
) | {"message", "asctime", "taskName"}

# Set on a record once a bridge exported it, so a record that propagates through
# two bridged loggers (a named one and the root) is exported once.
_EXPORTED_MARK: Final = "_nemo_lens_exported"

_NOT_EXPORTED: Final = _STANDARD_FIELDS | {
    sc.LOG_TRACE_ID,
    sc.LOG_SPAN_ID,
    sc.LOG_TRACE_SAMPLED,
    _EXPORTED_MARK,
}

# Each Python band (DEBUG is 10-19, ...) maps onto the four numbers of the matching
# OpenTelemetry band, so custom levels between the standard ones keep their order.
_BANDS: Final = (
    (logging.CRITICAL, otel_logs.SeverityNumber.FATAL),
    (logging.ERROR, otel_logs.SeverityNumber.ERROR),
    (logging.WARNING, otel_logs.SeverityNumber.WARN),
    (logging.INFO, otel_logs.SeverityNumber.INFO),
    (logging.DEBUG, otel_logs.SeverityNumber.DEBUG),
    (1, otel_logs.SeverityNumber.TRACE),
)


def _severity(levelno: int) -> otel_logs.SeverityNumber:
    for floor, base in _BANDS:
        if levelno >= floor:
            step = min(3, (levelno - floor) * 4 // 10)
            return otel_logs.SeverityNumber(base.value + step)
    return otel_logs.SeverityNumber.UNSPECIFIED


class TraceContextFilter(logging.Filter):
    """Adds the current trace context to each record as ``otelTraceID``, ``otelSpanID`` and
    ``otelTraceSampled`` (``"0"``, ``"0"``, ``False`` outside a span), for any formatter.

    Never filters anything out. A record that already has the fields keeps them: it was
    stamped where it was created (before a ``QueueHandler`` moved it, say).
    """

    def filter(self, record: logging.LogRecord) -> bool:
        """Stamp *record* and let it through."""
        fields = record.__dict__
        if sc.LOG_TRACE_ID in fields:
            return True
        span = trace.get_current_span().get_span_context()
        valid = span.is_valid
        fields[sc.LOG_TRACE_ID] = trace.format_trace_id(span.trace_id) if valid else _NO_ID
        fields[sc.LOG_SPAN_ID] = trace.format_span_id(span.span_id) if valid else _NO_ID
        fields[sc.LOG_TRACE_SAMPLED] = valid and span.trace_flags.sampled
        return True


def _attribute_value(value: object) -> AttributeValue:
    if isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, (list, tuple)) and all(
        isinstance(item, (str, bool, int, float)) for item in value
    ):
        kinds = {type(item) for item in value}
        if len(kinds) <= 1:
            return list(value)
    return safe_str(value)


def _exception_type(error_type: type[BaseException]) -> str:
    module = error_type.__module__
    if module == "builtins":
        return error_type.__qualname__
    return f"{module}.{error_type.__qualname__}"


class LoggingBridgeHandler(logging.Handler):
    """A ``logging.Handler`` that emits records as OpenTelemetry log records.

    A record becomes a log record with its time, severity, body (the message, or the
    formatter's output), the logger's name as scope, the trace context current where it was
    logged, its ``extra={...}`` fields, ``code.*`` and, for an exception, ``exception.*``.
    It emits through the current set-up's logger provider (looked up per record), so it
    follows re-initialisation and goes quiet after shutdown. Made by
    :func:`setup_logging_bridge`; construct one directly only to attach it elsewhere (a
    ``QueueListener``, say).
    """

    # Emitting can log (the SDK warns about a dropped attribute); that record must not
    # recurse into this handler. Per context, so other threads keep logging meanwhile.
    _emitting: contextvars.ContextVar[bool] = contextvars.ContextVar(
        "nemo_lens_bridge_emitting", default=False
    )

    def __init__(
        self, level: int = logging.NOTSET, provider: otel_logs.LoggerProvider | None = None
    ) -> None:
        super().__init__(level)
        # None: the current set-up's provider; else one the application installed itself
        # (see setup_logging_bridge).
        self._provider = provider
        self.addFilter(TraceContextFilter())

    def emit(self, record: logging.LogRecord) -> None:
        """Translate *record* and emit it (once, however many bridges it passes)."""
        fields = record.__dict__
        if fields.get(_EXPORTED_MARK) or self._emitting.get():
            return
        token = self._emitting.set(True)
        try:
            fields[_EXPORTED_MARK] = True
            provider = self._provider if self._provider is not None else _lens_provider()
            if provider is None:
                return
            logger = provider.get_logger(record.name)
            severity = _severity(record.levelno)
            context = otel_context.get_current()
            # False on ranks that export nothing and after shutdown: skip the work.
            try:
                wanted = logger.enabled(context=context, severity_number=severity)
            except AttributeError:  # an API from before Logger.enabled (1.40 and older)
                wanted = True
            if not wanted:
                return
            logger.emit(
                timestamp=int(record.created * 1e9),
                observed_timestamp=time.time_ns(),
                context=context,
                severity_number=severity,
                severity_text=record.levelname,
                body=self._body(record),
                attributes=self._attributes(record),
            )
        except Exception:
            self.handleError(record)
        finally:
            self._emitting.reset(token)

    def _body(self, record: logging.LogRecord) -> AnyValue:
        if self.formatter is not None:
            return self.format(record)
        return record.getMessage()

    def _attributes(self, record: logging.LogRecord) -> dict[str, AnyValue]:
        attributes: dict[str, AnyValue] = {
            key: _attribute_value(value)
            for key, value in record.__dict__.items()
            if key not in _NOT_EXPORTED and value is not None
        }
        attributes[sc.CODE_FILE_PATH] = record.pathname
        attributes[sc.CODE_FUNCTION_NAME] = record.funcName
        attributes[sc.CODE_LINE_NUMBER] = record.lineno
        if record.exc_info and record.exc_info[0] is not None:
            error_type, error, tb = record.exc_info
            attributes[sc.EXCEPTION_TYPE] = _exception_type(error_type)
            if error is not None:
                attributes[sc.EXCEPTION_MESSAGE] = safe_str(error)
            attributes[sc.EXCEPTION_STACKTRACE] = "".join(
                traceback.format_exception(error_type, error, tb)
            )
        return attributes

    def flush(self) -> None:
        """Nothing to do: the provider's processors flush (``handle.force_flush()``)."""


_LOCK = threading.Lock()


def _level(level: int | str) -> int:
    if isinstance(level, bool) or not isinstance(level, (int, str)):
        raise TypeError(f"level must be a logging level (int or name), got {level!r}")
    if isinstance(level, int):
        return level
    number = logging.getLevelName(level.strip().upper())
    if not isinstance(number, int):
        raise ValueError(
            f"unknown logging level {level!r}; use DEBUG, INFO, WARNING, ERROR or CRITICAL"
        )
    return number


def _installed(logger: logging.Logger) -> LoggingBridgeHandler | None:
    for handler in logger.handlers:
        if isinstance(handler, LoggingBridgeHandler):
            return handler
    return None


def _lens_provider() -> otel_logs.LoggerProvider | None:
    """The logger provider of the current set-up, if it has one (``logs_enabled``)."""
    handle = _state.current_handle()
    return handle.logger_provider if isinstance(handle, TelemetryHandle) else None


def _logs_active() -> bool:
    return _lens_provider() is not None


def _application_provider() -> otel_logs.LoggerProvider | None:
    """An SDK logger provider the application installed as the global one, if any (0.1.0
    attached the bridge to any SDK logger provider, not only its own set-up's)."""
    provider = otel_logs.get_logger_provider()
    if provider is _lens_provider() or isinstance(provider, otel_logs.NoOpLoggerProvider):
        return None
    # An SDK provider means its module was imported; looking there keeps the bridge
    # from importing the SDK itself.
    sdk_logs = sys.modules.get("opentelemetry.sdk._logs")
    sdk_class = getattr(sdk_logs, "LoggerProvider", None)
    # An instance of the SDK's class or a subclass of it, as 0.1.0 checked.
    if isinstance(sdk_class, type) and isinstance(provider, sdk_class):
        return provider
    return None


def setup_logging_bridge(
    logger_name: str = "", level: int | str = logging.INFO
) -> LoggingBridgeHandler | None:
    """Export the records of logger *logger_name* (``""``: the root) at *level* and up.

    Attaches a :class:`LoggingBridgeHandler` to the logger and returns it;
    records of the logger's descendants arrive too, as far as they propagate.
    Calling it again for the same logger returns the handler already there,
    with its level set to *level*. The logger's own level is left alone.

    Returns ``None`` and installs nothing when no logger provider is active:
    telemetry is not set up (yet, or disabled) or ``logs_enabled`` is false, and
    the application has not installed an SDK logger provider of its own (the
    bridge then exports through that one, as 0.1.0 did).

    Raises:
        TypeError: *logger_name* is not a ``str`` or *level* is not a level.
        ValueError: *level* is an unknown level name.
    """
    if not isinstance(logger_name, str):
        raise TypeError(f"logger_name must be a str ('' for the root logger), got {logger_name!r}")
    number = _level(level)
    active = _logs_active()
    provider = None if active else _application_provider()
    if not active and provider is None:
        reason = (
            "telemetry is not set up"
            if _state.current_handle() is None
            else "telemetry is set up with logs_enabled=False"
        )
        _logger.debug("nemo.lens: logging bridge not installed: %s", reason)
        return None
    logger = logging.getLogger(logger_name)
    with _LOCK:
        found = _installed(logger)
        if found is None:
            found = LoggingBridgeHandler(number, provider)
            logger.addHandler(found)
        else:
            found.setLevel(number)
    return found


def remove_logging_bridge(logger_name: str = "") -> bool:
    """Detach the bridge from logger *logger_name*; ``True`` if one was attached.

    Records already handed to the logger provider are still exported (call
    ``handle.force_flush()`` to hurry them).
    """
    if not isinstance(logger_name, str):
        raise TypeError(f"logger_name must be a str ('' for the root logger), got {logger_name!r}")
    logger = logging.getLogger(logger_name)
    with _LOCK:
        found = _installed(logger)
        if found is None:
            return False
        logger.removeHandler(found)
    found.close()
    return True
