"""Set-up and shutdown: :func:`setup_telemetry` and :class:`TelemetryHandle`.

Set-up runs in three phases so that a mistake never leaves a process half
configured:

1. **Validate** everything: the config's fields, the span-group spec, the
   exporter name and OTLP protocol variables, the export strategy and its
   answer for this rank, rank and world size, the ``trace_file`` template and
   the caller's resource attributes. Nothing global has changed yet; a failed
   call can simply be corrected and repeated.
2. **Build** the resource, exporters and providers
   (:func:`nemo.lens.providers.build_pipeline`). Still nothing global; a
   failure here releases what was built.
3. **Publish** in one step: point nemo.lens's process-wide providers at the new
   ones (see :mod:`nemo.lens._delegating` for why those are installed once and
   then re-pointed), enable the span groups, route the helpers' default tracer.

A disabled config skips 2 and 3: the handle's tracer and meter are no-ops,
every span group is off, and OpenTelemetry's globals are not touched, so the
application can still install providers of its own.

The first import of the SDK happens in phase 2; importing this module does
not import it.

With ``handle_signals`` set, phase 3 also routes SIGTERM through
:mod:`nemo.lens._signals`. A child forked after set-up keeps the handle: its
locks are replaced in the child, and a child started by ``multiprocessing``
(which leaves with ``os._exit``, skipping ``atexit``) shuts the handle down
through a ``multiprocessing`` finalizer, so its spans are exported.
"""

from __future__ import annotations

import atexit
import importlib
import logging
import math
import os
import sys
import threading
import weakref
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Final

from opentelemetry import metrics, trace
from opentelemetry.util.types import AttributeValue

from nemo.lens import _signals, semconv, state
from nemo.lens.config import NemoLensConfig
from nemo.lens.exporters import Signal
from nemo.lens.exporters.otlp_env import check_otlp_environment, register_otlp_secrets
from nemo.lens.strategies import (
    ExportStrategyFunction,
    ExportStrategyObject,
    export_decision,
    get_export_strategy,
)

if TYPE_CHECKING:
    from types import TracebackType

    from opentelemetry.sdk._logs.export import LogRecordExporter
    from opentelemetry.sdk.metrics.export import MetricReader
    from opentelemetry.sdk.trace.export import SpanExporter

    from nemo.lens.providers import Pipeline

__all__ = [
    "DEFAULT_SHUTDOWN_TIMEOUT_MS",
    "TelemetryHandle",
    "get_meter",
    "get_tracer",
    "setup_telemetry",
]

_logger = logging.getLogger(__name__)

DEFAULT_SHUTDOWN_TIMEOUT_MS: Final = 5000
"""How long :meth:`TelemetryHandle.shutdown` (and the exit hook) waits by default."""

_SCOPE_NAME: Final = semconv.SCOPE_NAME

# One flat union, so a lambda type-checks in either argument order (see strategies).
StrategyArgument = (
    ExportStrategyFunction | ExportStrategyObject | str | Callable[[int, int, NemoLensConfig], bool]
)
"""What ``setup_telemetry(export_strategy=...)`` accepts: a registered name, a callable
``strategy(config, rank, world_size)`` (0.1.0), an object with ``should_export``, or a
function whose first parameter is ``rank`` (see :func:`nemo.lens.strategies.export_decision`)."""
_TESTING_SHUTDOWN_TIMEOUT_MS: Final = 1000

# _current is the handle whose providers are published; guarded by _LOCK.
_LOCK = threading.RLock()
_current: TelemetryHandle | None = None
_atexit_registered = False


def _scope_version() -> str:
    from nemo.lens.resources import package_version

    return package_version()


def _use_tracer_provider(provider: trace.TracerProvider | None) -> None:
    """Route the helpers' default tracer (``tracer=None``) to *provider*."""
    try:
        helpers = importlib.import_module("nemo.lens.helpers")
    except ImportError:
        return
    use = getattr(helpers, "_use_tracer_provider", None)
    if use is not None:
        use(provider)


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
        tracer_provider = pipeline.tracer_provider if pipeline is not None else None
        meter_provider = pipeline.meter_provider if pipeline is not None else None
        version = _scope_version() if pipeline is not None else None
        if tracer is None:
            tracer = (
                tracer_provider.get_tracer(_SCOPE_NAME, version)
                if tracer_provider is not None
                else trace.NoOpTracer()
            )
        if meter is None:
            meter = (
                meter_provider.get_meter(_SCOPE_NAME, version)
                if meter_provider is not None
                else metrics.NoOpMeter(_SCOPE_NAME)
            )
        self._tracer: trace.Tracer = tracer
        self._meter: metrics.Meter = meter

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
        pipeline = self._pipeline
        if pipeline is None or pipeline.tracer_provider is None:
            return trace.NoOpTracerProvider()
        return pipeline.tracer_provider

    @property
    def meter_provider(self) -> metrics.MeterProvider:
        """nemo.lens's meter provider, e.g. for instrumentations that take one."""
        pipeline = self._pipeline
        if pipeline is None or pipeline.meter_provider is None:
            return metrics.NoOpMeterProvider()
        return pipeline.meter_provider

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
        one summary line on the ``nemo.lens.exporters.health`` logger says how
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
            _retire(self)
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

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.shutdown()

    def __repr__(self) -> str:
        if self._pipeline is None:
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


def _retire(handle: TelemetryHandle) -> None:
    """Unpublish *handle* if it is the installed one (idempotent)."""
    global _current
    with _LOCK:
        if _current is not handle:
            return
        _current = None
        _signals.uninstall(handle)
        from nemo.lens import _delegating

        _delegating.unpublish()
        state.set_enabled_span_groups(())
        _use_tracer_provider(None)


def _shutdown_at_exit() -> None:
    handle = _current
    if handle is not None:
        handle.shutdown(DEFAULT_SHUTDOWN_TIMEOUT_MS)


# -- fork ---------------------------------------------------------------------------

# Handles already registered with multiprocessing's after-fork registry.
_mp_registered: weakref.WeakSet[TelemetryHandle] = weakref.WeakSet()


def _before_fork() -> None:
    # multiprocessing's fork children leave with os._exit, which skips atexit.
    # Its after-fork registry (copied into the child by this very fork) lets the
    # child arm a finalizer that multiprocessing runs before that exit. Only
    # when multiprocessing is already loaded: it is the one doing the forking then.
    handle = _current
    util = sys.modules.get("multiprocessing.util")
    if handle is None or util is None or handle in _mp_registered:
        return
    _mp_registered.add(handle)
    util.register_after_fork(handle, _arm_multiprocessing_exit)


def _arm_multiprocessing_exit(handle: TelemetryHandle) -> None:
    util = sys.modules.get("multiprocessing.util")
    if util is not None and _current is handle:
        util.Finalize(handle, _shutdown_at_exit, exitpriority=10)


def _after_fork_in_child() -> None:
    # Only the forking thread exists in the child: a lock another thread held at
    # that instant would stay held forever.
    global _LOCK
    _LOCK = threading.RLock()
    handle = _current
    if handle is not None:
        handle._lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_before_fork, after_in_child=_after_fork_in_child)


# -- validation ---------------------------------------------------------------------


def _check_rank(rank: object, world_size: object) -> tuple[int, int]:
    for name, value in (("rank", rank), ("world_size", world_size)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"setup_telemetry({name}=...) must be an int, got {value!r}")
    assert isinstance(rank, int) and isinstance(world_size, int)
    if world_size < 1:
        raise ValueError(f"world_size must be at least 1, got {world_size}")
    if not 0 <= rank < world_size:
        raise ValueError(
            f"rank {rank} is out of range for world_size {world_size} "
            f"(valid ranks: 0..{world_size - 1})"
        )
    return rank, world_size


def _check_resource_attributes(
    attributes: Mapping[str, AttributeValue] | None,
) -> dict[str, AttributeValue]:
    if attributes is None:
        return {}
    if not isinstance(attributes, Mapping):
        raise TypeError(
            f"resource_attributes must be a mapping of str to attribute values, got "
            f"{type(attributes).__name__}"
        )
    checked: dict[str, AttributeValue] = {}
    scalar = (str, bool, int, float)
    for key, value in attributes.items():
        if not isinstance(key, str) or not key:
            raise TypeError(f"resource attribute keys must be non-empty str, got {key!r}")
        ok = isinstance(value, scalar) or (
            isinstance(value, Sequence)
            and not isinstance(value, str)
            and all(isinstance(item, scalar) for item in value)
        )
        if not ok:
            raise TypeError(
                f"resource attribute {key!r} has value {value!r} of type "
                f"{type(value).__name__}; use a str, bool, int, float or a sequence of them"
            )
        checked[key] = value
    return checked


def _check_components(span_exporter: object, metric_reader: object, log_exporter: object) -> None:
    """Refuse what set-up would otherwise hand to the SDK to fail on, deep inside it."""
    for argument, value, methods, example in (
        ("span_exporter", span_exporter, ("export", "shutdown"), "InMemorySpanExporter()"),
        ("log_exporter", log_exporter, ("export", "shutdown"), "InMemoryLogRecordExporter()"),
    ):
        if value is not None and not all(callable(getattr(value, m, None)) for m in methods):
            raise TypeError(
                f"setup_telemetry({argument}=...) takes an OpenTelemetry exporter (an object "
                f"with export() and shutdown(), such as the SDK's {example}), got "
                f"{type(value).__name__} {value!r}"
            )
    if metric_reader is not None:
        try:
            from opentelemetry.sdk.metrics.export import MetricReader
        except ImportError:  # without the SDK nothing can be a reader
            MetricReader = None  # type: ignore[assignment,misc]
        if MetricReader is None or not isinstance(metric_reader, MetricReader):
            raise TypeError(
                "setup_telemetry(metric_reader=...) takes an OpenTelemetry MetricReader (such "
                "as the SDK's InMemoryMetricReader() or PeriodicExportingMetricReader(exporter)), "
                f"got {type(metric_reader).__name__} {metric_reader!r}"
            )


def _resolve_strategy(
    config: NemoLensConfig, export_strategy: StrategyArgument | None
) -> ExportStrategyFunction | ExportStrategyObject | Callable[[int, int, NemoLensConfig], bool]:
    if export_strategy is None or isinstance(export_strategy, str):
        name = config.export_strategy if export_strategy is None else export_strategy
        registered: ExportStrategyFunction | ExportStrategyObject = get_export_strategy(name)
        return registered
    if callable(getattr(export_strategy, "should_export", None)) or callable(export_strategy):
        return export_strategy
    raise TypeError(
        "export_strategy must be a registered strategy name, a function "
        "strategy(config, rank, world_size) -> bool, or an object with "
        f"should_export(rank, world_size, config), got {export_strategy!r}"
    )


def _check_guard(allow_reinit: bool) -> None:
    if _current is not None and not allow_reinit:
        raise RuntimeError(
            "setup_telemetry() was already called in this process and its handle is still "
            "active (telemetry has already been initialised); call handle.shutdown() first, "
            "or pass _allow_reinit=True to shut the previous set-up down and replace it "
            "(notebooks, tests)"
        )


# -- set-up -------------------------------------------------------------------------


def setup_telemetry(
    config: NemoLensConfig,
    rank: int = 0,
    world_size: int = 1,
    resource_attributes: Mapping[str, AttributeValue] | None = None,
    span_exporter: SpanExporter | None = None,
    metric_reader: MetricReader | None = None,
    export_strategy: StrategyArgument | None = None,
    _allow_reinit: bool = False,
    log_exporter: LogRecordExporter | None = None,
) -> TelemetryHandle:
    """Set up telemetry for this process and return its :class:`TelemetryHandle`.

    Args:
        config: What to set up; ``config.enabled=False`` installs nothing.
        rank: This process's global rank.
        world_size: Number of ranks in the job.
        resource_attributes: Extra resource attributes; they win over every
            other source (see :mod:`nemo.lens.resources`).
        span_exporter: Use this exporter for spans instead of the configured
            one (e.g. the SDK's ``InMemorySpanExporter`` in tests).
        metric_reader: Use this reader for metrics instead of the configured
            exporter (e.g. ``InMemoryMetricReader``).
        export_strategy: Overrides ``config.export_strategy``: a registered
            name, a callable ``strategy(config, rank, world_size) -> bool``
            (0.1.0), an object with ``should_export(rank, world_size, config)``,
            or a function whose first parameter is named ``rank``, called as
            ``(rank, world_size, config)``.
        _allow_reinit: Replace an active set-up (shutting it down) instead of
            raising.
        log_exporter: Use this exporter for log records instead of the
            configured one (e.g. the SDK's ``InMemoryLogRecordExporter``);
            needs ``config.logs_enabled``.

    Everything is validated before anything global changes, so an exception
    leaves the process as it was. Exporters and readers (including the ones
    passed in) are attached only on ranks the export strategy selects.

    Raises:
        TypeError: an argument or config field has the wrong type.
        ValueError: a config value is invalid (unknown span group, exporter,
            strategy, OTLP protocol, rank out of range, bad ``trace_file``).
        RuntimeError: telemetry is already set up and ``_allow_reinit`` is false.
        ImportError: telemetry is enabled but the SDK extra is not installed.
    """
    global _current, _atexit_registered

    # Phase 1: validate. Nothing global may change before this phase ends.
    if not isinstance(config, NemoLensConfig):
        raise TypeError(
            f"setup_telemetry() needs a NemoLensConfig, got {type(config).__name__}; "
            "build one with NemoLensConfig(...) or NemoLensConfig.from_env()"
        )
    if not isinstance(_allow_reinit, bool):
        raise TypeError(f"_allow_reinit must be a bool, got {_allow_reinit!r}")
    rank, world_size = _check_rank(rank, world_size)
    if export_strategy is None:
        config.validate()
    else:
        config._check_fields()
    extra_attributes = _check_resource_attributes(resource_attributes)
    _check_components(span_exporter, metric_reader, log_exporter)

    if not config.enabled:
        with _LOCK:
            _check_guard(_allow_reinit)
            previous = _current
        if previous is not None:
            previous.shutdown()
        state.set_enabled_span_groups(())
        return TelemetryHandle(
            config=config,
            rank=rank,
            world_size=world_size,
            enabled_groups=frozenset(),
            is_exporting=False,
            pipeline=None,
        )

    if config.handle_signals and threading.current_thread() is not threading.main_thread():
        raise RuntimeError(
            "NemoLensConfig.handle_signals=True needs setup_telemetry() to be called from the "
            "main thread (Python lets only the main thread install signal handlers); call it "
            "there, or set handle_signals=False"
        )
    if config.export_rank >= world_size:
        raise ValueError(
            f"NemoLensConfig.export_rank {config.export_rank} is out of range for world_size "
            f"{world_size}; use a rank in 0..{world_size - 1} or -1 for the last rank"
        )
    groups = config.resolved_span_groups if config.traces_enabled else frozenset()
    resolved = config.resolved()
    strategy = _resolve_strategy(resolved, export_strategy)
    exporting = export_decision(strategy, resolved, rank, world_size)
    exporter_name = resolved.exporter.strip().lower()
    trace_path = resolved.format_trace_file(rank) if exporter_name == "file" else None
    signals: list[Signal] = []
    if exporter_name == "otlp" and exporting:
        if resolved.traces_enabled and span_exporter is None:
            signals.append("traces")
        if resolved.metrics_enabled and metric_reader is None:
            signals.append("metrics")
        if resolved.logs_enabled and log_exporter is None:
            signals.append("logs")
        for signal in signals:
            # The protocol, headers, timeout, compression and endpoint: each
            # exporter would otherwise fail deep in its constructor, or print a
            # malformed header (and the token in it) to stderr.
            check_otlp_environment(signal)
    with _LOCK:
        _check_guard(_allow_reinit)

    # Phase 2: build, still without touching global state.
    try:
        from nemo.lens.providers import build_pipeline
    except ImportError as exc:
        raise ImportError(
            f"telemetry is enabled but the OpenTelemetry SDK could not be imported ({exc}); "
            "install it with pip install 'nemo-lens[sdk]'"
        ) from exc
    for signal in signals:
        register_otlp_secrets(signal)
    pipeline = build_pipeline(
        resolved,
        rank=rank,
        world_size=world_size,
        exporting=exporting,
        trace_path=trace_path,
        resource_attributes=extra_attributes,
        span_exporter=span_exporter,
        metric_reader=metric_reader,
        log_exporter=log_exporter,
    )
    handle = TelemetryHandle(
        config=resolved,
        rank=rank,
        world_size=world_size,
        enabled_groups=groups,
        is_exporting=exporting and pipeline.exports,
        pipeline=pipeline,
    )

    # Phase 3: publish in one step.
    with _LOCK:
        try:
            # Another thread may have set up while this one was building.
            _check_guard(_allow_reinit)
        except RuntimeError:
            pipeline.shutdown(_TESTING_SHUTDOWN_TIMEOUT_MS)
            raise
        previous = _current
        if previous is not None:
            previous.shutdown()
        from nemo.lens import _delegating

        _delegating.publish(
            pipeline.tracer_provider, pipeline.meter_provider, pipeline.logger_provider
        )
        state.set_span_group_classes(resolved.span_group_cls)
        state.set_enabled_span_groups(groups)
        _use_tracer_provider(pipeline.tracer_provider)
        _current = handle
        if resolved.handle_signals:
            _install_signal_handlers(handle)
        if not _atexit_registered:
            # Our hook replaces the SDK's (disabled in providers): it is bounded,
            # where the SDK's can hold up interpreter exit for 30 s on a dead collector.
            atexit.register(_shutdown_at_exit)
            _atexit_registered = True
    _logger.info(
        "nemo.lens: telemetry set up (rank %d/%d, run %s, exporting=%s, exporter=%s, groups=%s)",
        rank,
        world_size,
        resolved.run_id,
        handle.is_exporting,
        exporter_name,
        ",".join(sorted(groups)) or "-",
    )
    return handle


def _install_signal_handlers(handle: TelemetryHandle) -> None:
    # Runs while publishing: a failure here must not leave set-up half done, so
    # it is reported and telemetry runs on without the handler.
    try:
        _signals.install(handle, flush=handle.force_flush, shutdown=handle.shutdown)
    except Exception:
        _logger.exception("nemo.lens: could not install the SIGTERM handler (handle_signals)")


def get_tracer(name: str = _SCOPE_NAME, version: str | None = None) -> trace.Tracer:
    """Return a tracer for instrumentation scope *name*.

    While telemetry is set up, the tracer comes from nemo.lens's provider and
    keeps following it (through re-initialisation; no-op after shutdown), even
    when the application owns OpenTelemetry's global provider. Before set-up it
    comes from OpenTelemetry's global provider, as ``trace.get_tracer`` would.
    Cache the result: looking a tracer up costs microseconds.
    """
    if version is None and name == _SCOPE_NAME:
        version = _scope_version()
    if _current is not None:
        from nemo.lens._delegating import TRACER_HUB

        return TRACER_HUB.get_tracer(name, version)
    return trace.get_tracer(name, version)


def get_meter(name: str = _SCOPE_NAME, version: str | None = None) -> metrics.Meter:
    """Return a meter for instrumentation scope *name* (see :func:`get_tracer`).

    Instruments created from it while telemetry is set up are recreated on the
    new provider when set-up is replaced.
    """
    if version is None and name == _SCOPE_NAME:
        version = _scope_version()
    if _current is not None:
        from nemo.lens._delegating import METER_HUB

        return METER_HUB.get_meter(name, version)
    return metrics.get_meter(name, version or "")


def _reset_for_testing() -> None:
    """Return the process to its state before any set-up (tests only).

    Shuts down the installed handle (never raising, short timeout), forgets it,
    releases OpenTelemetry's globals that nemo.lens claimed, disables every
    span group, restores the default tracer and forgets custom export
    strategies.
    """
    global _current
    with _LOCK:
        handle = _current
    if handle is not None:
        try:
            handle.shutdown(_TESTING_SHUTDOWN_TIMEOUT_MS)
        except Exception:
            _logger.exception("nemo.lens: shutdown during test reset failed")
    with _LOCK:
        _current = None
    from nemo.lens import _delegating
    from nemo.lens.strategies import _reset_registry_for_testing

    _delegating.restore_otel_globals_for_testing()
    _reset_registry_for_testing()
    state.set_enabled_span_groups(())
    state._reset_span_group_classes()
    _use_tracer_provider(None)
