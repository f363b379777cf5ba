"""The handle set-up returns: the tracer, the meter, flushing and shutting down.

:class:`TelemetryHandle` is API-side: a disabled set-up returns one too, with
no-op tracer and meter and no pipeline. When set-up built a pipeline
(:mod:`nemo.lens._sdk.pipeline`), the handle owns it: :meth:`~TelemetryHandle.force_flush`
and :meth:`~TelemetryHandle.shutdown` are bounded by their timeout and say
whether everything was delivered, and shutting down retires the handle (its
providers are unpublished). An exit hook shuts the current handle down if the job
forgets to.
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Mapping
from types import MappingProxyType
from typing import Final, Protocol

from opentelemetry import metrics, trace
from opentelemetry.util.types import AttributeValue

from nemo.lens import semconv, state
from nemo.lens._core import signals as _signals
from nemo.lens._core import state as _state
from nemo.lens.config import NemoLensConfig

__all__ = [
    "DEFAULT_SHUTDOWN_TIMEOUT_MS",
    "LOCK",
    "Pipeline",
    "TelemetryHandle",
    "renew_locks_after_fork",
    "retire",
    "shutdown_at_exit",
]

# The logger keeps the name users configure it by (this code's module before it moved).
_logger = logging.getLogger("nemo.lens.handle")

DEFAULT_SHUTDOWN_TIMEOUT_MS: Final = 5000
"""How long :meth:`TelemetryHandle.shutdown` (and the exit hook) waits by default."""

# Guards changes of the current handle (kept in nemo.lens._core.state).
LOCK = threading.RLock()


class _Resource(Protocol):
    @property
    def attributes(self) -> Mapping[str, AttributeValue]: ...


class _Health(Protocol):
    def lost(self) -> Mapping[str, int]: ...


class Pipeline(Protocol):
    """What a handle owns when set-up built telemetry: the SDK side's pipeline
    (``nemo.lens._sdk.pipeline.Pipeline``), as the handle sees it. Declared here, on the
    API side, so that this side never imports the SDK's: set-up, above both, hands it in."""

    @property
    def resource(self) -> _Resource: ...

    @property
    def health(self) -> _Health: ...

    @property
    def tracer_provider(self) -> trace.TracerProvider | None: ...

    @property
    def meter_provider(self) -> metrics.MeterProvider | None: ...

    def force_flush(self, timeout_ms: float) -> bool: ...

    def shutdown(self, timeout_ms: float) -> bool: ...


class TelemetryHandle:
    """What :func:`setup_telemetry` returns: the tracer, the meter and the way out.

    Keep it for the life of the job and call :meth:`shutdown` at the end (or use
    it as a context manager); an exit hook shuts it down too if you forget,
    bounded by :data:`DEFAULT_SHUTDOWN_TIMEOUT_MS`.

    ``TelemetryHandle(tracer, meter, is_exporting=False)`` (0.1.0's constructor)
    wraps a tracer and meter of your own, e.g. in tests; such a handle installed
    nothing, so its :meth:`shutdown` has nothing to shut down.
    """

    def __init__(
        self,
        tracer: trace.Tracer | None = None,
        meter: metrics.Meter | None = None,
        is_exporting: bool = False,
        *,
        config: NemoLensConfig | None = None,
        rank: int = 0,
        world_size: int = 1,
        enabled_groups: frozenset[str] = frozenset(),
        pipeline: Pipeline | None = None,
    ) -> None:
        self._config = NemoLensConfig() if config is None else config
        self._rank = rank
        self._world_size = world_size
        self._enabled_groups = enabled_groups
        self._is_exporting = is_exporting
        self._pipeline = pipeline
        self._lock = threading.Lock()
        self._closing = False
        self._closed = threading.Event()
        self._shutdown_ok = True
        tracer_provider = None if pipeline is None else pipeline.tracer_provider
        meter_provider = None if pipeline is None else pipeline.meter_provider
        self._tracer_provider: trace.TracerProvider = (
            trace.NoOpTracerProvider() if tracer_provider is None else tracer_provider
        )
        self._meter_provider: metrics.MeterProvider = (
            metrics.NoOpMeterProvider() if meter_provider is None else meter_provider
        )
        version = _state.SCOPE_VERSION if pipeline is not None else None
        self._tracer: trace.Tracer = (
            self._tracer_provider.get_tracer(semconv.SCOPE_NAME, version)
            if tracer is None
            else tracer
        )
        self._meter: metrics.Meter = (
            self._meter_provider.get_meter(semconv.SCOPE_NAME, version) if meter is None else meter
        )

    # -- what users read ------------------------------------------------------------

    @property
    def tracer(self) -> trace.Tracer:
        """The tracer of nemo.lens's provider (a no-op tracer when disabled)."""
        return self._tracer

    @property
    def meter(self) -> metrics.Meter:
        """The meter of nemo.lens's provider (a no-op meter when disabled)."""
        return self._meter

    @property
    def is_exporting(self) -> bool:
        """Whether this rank exports anything (export strategy said yes and an
        exporter or metric reader is attached)."""
        return self._is_exporting

    @property
    def enabled_groups(self) -> frozenset[str]:
        """The span groups set-up enabled (empty when disabled or traces are off)."""
        return self._enabled_groups

    @property
    def enabled(self) -> bool:
        """Whether set-up installed telemetry (the config was enabled)."""
        return self._pipeline is not None

    @property
    def config(self) -> NemoLensConfig:
        """The config in effect, with ``run_id`` resolved."""
        return self._config

    @property
    def rank(self) -> int:
        """The rank passed to :func:`setup_telemetry`."""
        return self._rank

    @property
    def world_size(self) -> int:
        """The world size passed to :func:`setup_telemetry`."""
        return self._world_size

    @property
    def tracer_provider(self) -> trace.TracerProvider:
        """nemo.lens's tracer provider, e.g. for instrumentations that take one."""
        return self._tracer_provider

    @property
    def meter_provider(self) -> metrics.MeterProvider:
        """nemo.lens's meter provider, e.g. for instrumentations that take one."""
        return self._meter_provider

    @property
    def resource_attributes(self) -> Mapping[str, AttributeValue]:
        """The resource attributes every span and metric of this process carries."""
        if self._pipeline is None:
            return MappingProxyType({})
        return MappingProxyType(dict(self._pipeline.resource.attributes))

    @property
    def undelivered(self) -> Mapping[str, int]:
        """Telemetry this set-up could not deliver so far, by signal (``traces``,
        ``metrics``, ``logs``): items whose export failed plus items dropped.

        Empty when everything went out, or nothing was set up. Read it after
        :meth:`shutdown` to know whether everything was exported.
        """
        if self._pipeline is None:
            return MappingProxyType({})
        return MappingProxyType(self._pipeline.health.lost())

    @property
    def is_shut_down(self) -> bool:
        """Whether :meth:`shutdown` has been called."""
        return self._closing

    # -- lifecycle ------------------------------------------------------------------

    def force_flush(self, timeout_ms: float = DEFAULT_SHUTDOWN_TIMEOUT_MS) -> bool:
        """Export everything buffered so far; wait at most *timeout_ms*.

        Returns ``True`` when every signal finished in time and nothing was
        lost since the previous flush (or set-up): no span dropped, no export
        failed. Always ``True`` when disabled or after shutdown. *timeout_ms*
        is read as :meth:`shutdown` reads it; this never raises for it.
        """
        wait_ms = _timeout_ms(timeout_ms, "force_flush")
        if self._pipeline is None or self._closing:
            return True
        return self._pipeline.force_flush(wait_ms)

    def shutdown(self, timeout_ms: float = DEFAULT_SHUTDOWN_TIMEOUT_MS) -> bool:
        """Flush and shut down what set-up installed; return within *timeout_ms*.

        Spans still open are ended with ``nemo.span.truncated = True`` and
        exported. Returns ``True`` only when everything was delivered: ``False``
        when a span, metric export or log record was lost at any time (dropped
        at a full queue, failed to export, ended after shutdown) or the
        exporters had not finished by the deadline (an unreachable collector);
        one summary line on the ``nemo.lens._sdk.exporters.health`` logger says how
        many and why. Unfinished work continues in daemon threads that do not
        delay exit. Afterwards every span group is disabled, OpenTelemetry's
        global providers forward to no-ops and the helpers' default tracer
        follows the global one again. Calling it again is harmless: it returns
        the first call's result (waiting up to *timeout_ms* if that call is
        still running).

        It never raises, so it cannot replace the job's own exception in a
        ``finally`` block: a negative *timeout_ms* means no wait,
        ``math.inf`` (or anything beyond a century) as long as it takes; NaN or
        a value that is not a number is logged as a warning and the default
        (:data:`DEFAULT_SHUTDOWN_TIMEOUT_MS`) used.
        """
        wait_ms = _timeout_ms(timeout_ms, "shutdown")
        with self._lock:
            already = self._closing
            self._closing = True
        if already:
            self._closed.wait(wait_ms / 1000)
            return self._shutdown_ok
        try:
            retire(self)
            if self._pipeline is not None:
                self._shutdown_ok = self._pipeline.shutdown(wait_ms)
        except Exception:
            # Telemetry must not be the exception a job's finally block ends with.
            _logger.exception("nemo.lens: shutting telemetry down failed")
            self._shutdown_ok = False
        finally:
            self._closed.set()
        return self._shutdown_ok

    def __enter__(self) -> TelemetryHandle:
        return self

    def __exit__(self, *exc_info: object) -> None:
        # Shut down whether or not the block raised; its exception propagates.
        self.shutdown()

    def __repr__(self) -> str:
        if self._pipeline is None:
            if self._config.enabled:
                # A rank the export strategy leaves out (see spans_on_every_rank).
                return (
                    f"<TelemetryHandle rank={self._rank}/{self._world_size} not exporting: "
                    "no span group enabled>"
                )
            return "<TelemetryHandle disabled>"
        state_text = "shut down" if self._closing else "active"
        return (
            f"<TelemetryHandle {state_text} rank={self._rank}/{self._world_size} "
            f"exporting={self._is_exporting} exporter={self._config.exporter!r} "
            f"groups={sorted(self._enabled_groups)}>"
        )


# Half of the longest wait threading accepts (over a century): what "no bound" means.
_LONGEST_WAIT_MS: Final = threading.TIMEOUT_MAX * 500


def _timeout_ms(timeout_ms: object, method: str) -> float:
    """*timeout_ms* as a wait in milliseconds that never fails (see ``shutdown``)."""
    if isinstance(timeout_ms, bool) or not isinstance(timeout_ms, (int, float)):
        _logger.warning(
            "nemo.lens: %s(timeout_ms=%r): timeout_ms must be a number of milliseconds; "
            "using the default, %d ms",
            method,
            timeout_ms,
            DEFAULT_SHUTDOWN_TIMEOUT_MS,
        )
        return DEFAULT_SHUTDOWN_TIMEOUT_MS
    if math.isnan(timeout_ms):
        _logger.warning(
            "nemo.lens: %s(timeout_ms=nan): timeout_ms must be a number of milliseconds; "
            "using the default, %d ms",
            method,
            DEFAULT_SHUTDOWN_TIMEOUT_MS,
        )
        return DEFAULT_SHUTDOWN_TIMEOUT_MS
    if timeout_ms < 0:
        _logger.warning(
            "nemo.lens: %s(timeout_ms=%r): timeout_ms must be >= 0; not waiting", method, timeout_ms
        )
        return 0.0
    return float(min(timeout_ms, _LONGEST_WAIT_MS))


def retire(handle: TelemetryHandle) -> None:
    """Unpublish *handle* if it is the installed one (idempotent)."""
    with LOCK:
        if _state.current_handle() is not handle:
            return
        _state.set_current_handle(None)
        _signals.uninstall(handle)
        from nemo.lens._core import hub

        hub.unpublish()
        state.set_enabled_span_groups(())
        _state.use_tracer_provider(None)


def shutdown_at_exit() -> None:
    handle = _state.current_handle()
    if handle is not None:
        handle.shutdown(DEFAULT_SHUTDOWN_TIMEOUT_MS)


def renew_locks_after_fork() -> None:
    """In a forked child: replace the locks the parent's other threads may have held."""
    global LOCK
    LOCK = threading.RLock()
    handle = _state.current_handle()
    if isinstance(handle, TelemetryHandle):
        handle._lock = threading.Lock()
