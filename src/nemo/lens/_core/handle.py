"""The handle set-up returns, OpenTelemetry's globals while it is current, and its end.

A disabled set-up's handle has no pipeline; an enabled one owns the SDK side's pipeline
(handed in by set-up) and makes its providers OpenTelemetry's globals until it shuts down.
"""

from __future__ import annotations

import importlib
import logging
import math
import sys
import threading
import weakref
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, Final, Protocol

from opentelemetry import _logs, metrics, trace
from opentelemetry.util._once import Once
from opentelemetry.util.types import AttributeValue

from nemo.lens import _compat, semconv
from nemo.lens._compat import FIXTURE_SHUTDOWN_TIMEOUT_MS
from nemo.lens._core import fork
from nemo.lens._core import signals as _signals
from nemo.lens._core import state as _state
from nemo.lens.config import NemoLensConfig
from nemo.lens.registry import forget_hand_registered

__all__ = [
    "DEFAULT_SHUTDOWN_TIMEOUT_MS",
    "LOCK",
    "Pipeline",
    "TelemetryHandle",
    "get_meter",
    "get_tracer",
    "install_globals",
    "is_telemetry_initialized",
    "release_globals",
    "reset_for_testing",
    "retire",
    "shutdown_at_exit",
]

_logger = logging.getLogger("nemo.lens.handle")

DEFAULT_SHUTDOWN_TIMEOUT_MS: Final = 5000
"""How long :meth:`TelemetryHandle.shutdown` (and the exit hook) waits by default."""

LOCK = threading.RLock()
"""Guards changes of the current handle (kept in :mod:`nemo.lens._core.state`)."""


class _Resource(Protocol):
    @property
    def attributes(self) -> Mapping[str, AttributeValue]: ...


class _Health(Protocol):
    def lost(self) -> Mapping[str, int]: ...


class Pipeline(Protocol):
    """The SDK side's pipeline as the handle sees it (set-up, above both sides, hands it in)."""

    @property
    def resource(self) -> _Resource: ...

    @property
    def health(self) -> _Health: ...

    @property
    def tracer_provider(self) -> trace.TracerProvider | None: ...

    @property
    def meter_provider(self) -> metrics.MeterProvider | None: ...

    @property
    def logger_provider(self) -> _logs.LoggerProvider | None: ...

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
        """This process's rank: passed to :func:`setup_telemetry`, or read by a rank-less
        set-up from the resource attributes (0 when neither said)."""
        return self._rank

    @property
    def world_size(self) -> int:
        """The job's world size, passed or read as :attr:`rank` is."""
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
    def logger_provider(self) -> _logs.LoggerProvider | None:
        """nemo.lens's logger provider (``None`` unless ``logs_enabled``)."""
        return None if self._pipeline is None else self._pipeline.logger_provider

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
        one summary line on the ``nemo.lens.exporters.health`` logger says how
        many and why. Unfinished work continues in daemon threads that do not
        delay exit. Afterwards every span group is disabled, OpenTelemetry's
        global providers are its own proxies again (a tracer or instrument taken
        from them follows the next set-up) and the helpers' default tracer
        follows the global one. Calling it again is harmless: it returns the
        first call's result (waiting up to *timeout_ms* if that call is still
        running).

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
        problem = f"{method}(timeout_ms={timeout_ms!r})"
    elif math.isnan(timeout_ms):
        problem = f"{method}(timeout_ms=nan)"
    elif timeout_ms < 0:
        _logger.warning(
            "nemo.lens: %s(timeout_ms=%r): timeout_ms must be >= 0; not waiting", method, timeout_ms
        )
        return 0.0
    else:
        return float(min(timeout_ms, _LONGEST_WAIT_MS))
    _logger.warning(
        "nemo.lens: %s: timeout_ms must be a number of milliseconds; using the default, %d ms",
        problem,
        DEFAULT_SHUTDOWN_TIMEOUT_MS,
    )
    return DEFAULT_SHUTDOWN_TIMEOUT_MS


def is_telemetry_initialized() -> bool:
    """Whether an enabled :func:`setup_telemetry` is active in this process.

    A library that runs inside another's job asks this before setting up, and uses
    :func:`get_tracer` and :func:`get_meter` instead when it is ``True`` (the owner of
    the set-up shuts it down). It is v0.2.0's ``nemo.lens.handle._INITIALIZED``, read
    through a public name: ``False`` again after the set-up's handle shuts down.
    """
    return _compat.initialised()


def retire(handle: TelemetryHandle) -> None:
    """Unpublish *handle* if it is the installed one (idempotent)."""
    with LOCK:
        if _state.current_handle() is not handle:
            return
        _state.set_current_handle(None)
        _signals.uninstall(handle)
        release_globals()
        _state.set_enabled_span_groups(())
        _state.use_tracer_provider(None)


def shutdown_at_exit() -> None:
    handle = _state.current_handle()
    if handle is not None:
        handle.shutdown(DEFAULT_SHUTDOWN_TIMEOUT_MS)


# -- OpenTelemetry's globals -------------------------------------------------------------------

# OpenTelemetry sets each global once; these are its slots (the once-guard is the slot's name
# with _SET_ONCE), as its own test suite resets them.
_SLOTS: Final = {
    "tracer": ("opentelemetry.trace", "_TRACER_PROVIDER"),
    "meter": ("opentelemetry.metrics._internal", "_METER_PROVIDER"),
    "logger": ("opentelemetry._logs._internal", "_LOGGER_PROVIDER"),
}
_API: Final[Mapping[str, Any]] = {"tracer": trace, "meter": metrics, "logger": _logs}
# The providers nemo.lens made OpenTelemetry's globals: only these are its to release.
_installed: list[object] = []


def install_globals(
    tracer_provider: trace.TracerProvider | None,
    meter_provider: metrics.MeterProvider | None,
    logger_provider: _logs.LoggerProvider | None,
) -> None:
    """Make the given providers OpenTelemetry's globals, replacing the ones nemo.lens set
    before; a global the application set itself is left in place, with a warning."""
    release_globals()
    for signal, provider in (
        ("tracer", tracer_provider),
        ("meter", meter_provider),
        ("logger", logger_provider),
    ):
        if provider is None:
            continue
        api = _API[signal]  # looked up per call: tests wrap the API's functions
        getattr(api, f"set_{signal}_provider")(provider)  # ignored, with a warning, if set
        get: Callable[[], object] = getattr(api, f"get_{signal}_provider")
        if get() is provider:
            _installed.append(provider)
            continue
        _logger.warning(
            "nemo.lens: the process already has a global %s provider of its own (%r); it is "
            "left in place. nemo.lens spans and metrics use nemo.lens's provider through the "
            "handle and the helpers, but other instrumentation keeps using the existing one.",
            signal,
            get(),
        )


def release_globals() -> None:
    """Let OpenTelemetry's globals that nemo.lens set be set again.

    The one reset behind re-initialisation, shutdown and test resets. Instruments made
    from OpenTelemetry's proxy meters forward to no-ops until the next set-up rebinds
    them; a provider the application installed itself is never touched.
    """
    for signal, (module_name, slot) in _SLOTS.items():
        module = importlib.import_module(module_name)
        current = getattr(module, slot, None)
        if current is None or not any(current is mine for mine in _installed):
            continue
        setattr(module, slot, None)
        setattr(module, f"{slot}_SET_ONCE", Once())
        proxy = getattr(module, "_PROXY_METER_PROVIDER", None)
        if signal == "meter" and proxy is not None:
            # Its instruments forward to no-ops, and new meters are proxies again.
            proxy.on_set_meter_provider(metrics.NoOpMeterProvider())
            proxy._real_meter_provider = None
    _installed.clear()


def get_tracer(name: str = semconv.SCOPE_NAME, version: str | None = None) -> trace.Tracer:
    """Return a tracer for instrumentation scope *name*.

    While telemetry is set up, from nemo.lens's provider (even when the application
    owns OpenTelemetry's global provider); else from OpenTelemetry's global provider,
    as ``trace.get_tracer`` would: a tracer taken before set-up follows the first
    set-up it is used under. Cache the result: looking a tracer up costs microseconds.
    """
    if version is None and name == semconv.SCOPE_NAME:
        version = _state.SCOPE_VERSION
    handle = _state.current_handle()
    if isinstance(handle, TelemetryHandle):
        return handle.tracer_provider.get_tracer(name, version)
    return trace.get_tracer(name, version)


def get_meter(name: str = semconv.SCOPE_NAME, version: str | None = None) -> metrics.Meter:
    """Return a meter for instrumentation scope *name* (see :func:`get_tracer`).

    A meter taken before set-up is OpenTelemetry's proxy: its instruments follow every
    later set-up.
    """
    if version is None and name == semconv.SCOPE_NAME:
        version = _state.SCOPE_VERSION
    handle = _state.current_handle()
    if isinstance(handle, TelemetryHandle):
        return handle.meter_provider.get_meter(name, version)
    return metrics.get_meter(name, version or "")


def reset_for_testing() -> None:
    """Return the process to its state before any set-up (tests only).

    Shuts down the installed handle (never raising, short timeout), releases
    OpenTelemetry's globals nemo.lens set, disables every span group, restores the
    default tracer and forgets custom export strategies and hand-registered namespaces.
    """
    with LOCK:
        handle = _state.current_handle()
    if handle is not None:
        try:
            handle.shutdown(FIXTURE_SHUTDOWN_TIMEOUT_MS)
        except Exception:
            _logger.exception("nemo.lens: shutdown during test reset failed")
    with LOCK:
        _state.set_current_handle(None)
        _compat.claim_setup(False)
    release_globals()
    _forget_custom_strategies()
    forget_hand_registered()
    _state.set_enabled_span_groups(())
    _state.reset_span_group_classes()
    _state.use_tracer_provider(None)


def _forget_custom_strategies() -> None:
    from nemo.lens import strategies

    for name, strategy in strategies.registered_strategies().items():
        builtin = strategies.BUILTIN_STRATEGIES.get(name)
        if builtin is None:
            strategies.unregister_export_strategy(name)
        elif strategy is not builtin:
            strategies.register_export_strategy(name, builtin, allow_override=True)


# -- fork ----------------------------------------------------------------------------------

# Handles already registered with multiprocessing's after-fork registry.
_mp_registered: weakref.WeakSet[_state.Handle] = weakref.WeakSet()


def _before_fork() -> None:
    # multiprocessing's fork children leave with os._exit, which skips atexit. Its
    # after-fork registry (copied into the child by this very fork) lets the child arm a
    # finalizer that multiprocessing runs before that exit.
    handle = _state.current_handle()
    util = sys.modules.get("multiprocessing.util")
    if handle is None or util is None or handle in _mp_registered:
        return
    _mp_registered.add(handle)
    util.register_after_fork(handle, _arm_multiprocessing_exit)


def _arm_multiprocessing_exit(handle: _state.Handle) -> None:
    util = sys.modules.get("multiprocessing.util")
    if util is not None and _state.current_handle() is handle:
        util.Finalize(handle, shutdown_at_exit, exitpriority=10)


def _renew_locks_in_child() -> None:
    # Only the forking thread exists in a child: a lock another thread held stays held.
    global LOCK
    LOCK = threading.RLock()
    handle = _state.current_handle()
    if isinstance(handle, TelemetryHandle):
        handle._lock = threading.Lock()


fork.on_fork(before=_before_fork, after_in_child=_renew_locks_in_child)
