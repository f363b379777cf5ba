"""Set-up: :func:`setup_telemetry`, and the tracer and meter of whatever it installed.

Set-up runs in three phases so that a mistake never leaves a process half
configured:

1. **Validate** everything: the config's fields, the span-group spec, the
   exporter name and OTLP protocol variables, the export strategy and its
   answer for this rank, rank and world size, the ``trace_file`` template and
   the caller's resource attributes (:mod:`nemo.lens._core.setup_checks`).
   Nothing global has changed yet; a failed call can simply be corrected and
   repeated.
2. **Build** the resource, exporters and providers
   (:func:`nemo.lens._sdk.pipeline.build_pipeline`). Still nothing global; a
   failure here releases what was built.
3. **Publish** in one step: point nemo.lens's process-wide providers at the new
   ones (see :mod:`nemo.lens._core.hub` for why those are installed once and
   then re-pointed), enable the span groups, route the helpers' default tracer.

A disabled config skips 2 and 3: the handle's tracer and meter are no-ops,
every span group is off, and OpenTelemetry's globals are not touched, so the
application can still install providers of its own.

The first import of the SDK happens in phase 2; importing this module does
not import it.

With ``handle_signals`` set, phase 3 also routes SIGTERM through
:mod:`nemo.lens._core.signals`. A child forked after set-up keeps the handle: its
locks are replaced in the child, and a child started by ``multiprocessing``
(which leaves with ``os._exit``, skipping ``atexit``) shuts the handle down
through a ``multiprocessing`` finalizer, so its spans are exported.
"""

from __future__ import annotations

import atexit
import logging
import sys
import threading
import weakref
from collections.abc import Mapping
from typing import TYPE_CHECKING, Final

from opentelemetry import metrics, trace
from opentelemetry.util.types import AttributeValue

from nemo.lens import semconv, state
from nemo.lens._core import fork
from nemo.lens._core import handle as _handle
from nemo.lens._core import signals as _signals
from nemo.lens._core import state as _state
from nemo.lens._core.destinations import Signal
from nemo.lens._core.handle import (
    TelemetryHandle,
    renew_locks_after_fork,
    shutdown_at_exit,
)
from nemo.lens._core.otlp_env import check_otlp_environment, register_otlp_secrets
from nemo.lens._core.setup_checks import (
    StrategyArgument,
    check_components,
    check_guard,
    check_rank,
    check_resource_attributes,
    resolve_strategy,
)
from nemo.lens.config import NemoLensConfig
from nemo.lens.strategies import export_decision

if TYPE_CHECKING:
    from opentelemetry.sdk._logs.export import LogRecordExporter
    from opentelemetry.sdk.metrics.export import MetricReader
    from opentelemetry.sdk.trace.export import SpanExporter


__all__ = ["StrategyArgument", "get_meter", "get_tracer", "reset_for_testing", "setup_telemetry"]

_logger = logging.getLogger("nemo.lens.handle")

_SCOPE_NAME: Final = semconv.SCOPE_NAME

_TESTING_SHUTDOWN_TIMEOUT_MS: Final = 1000
_atexit_registered = False

# -- fork ---------------------------------------------------------------------------

# Handles already registered with multiprocessing's after-fork registry.
_mp_registered: weakref.WeakSet[TelemetryHandle] = weakref.WeakSet()


def _before_fork() -> None:
    # multiprocessing's fork children leave with os._exit, which skips atexit.
    # Its after-fork registry (copied into the child by this very fork) lets the
    # child arm a finalizer that multiprocessing runs before that exit. Only
    # when multiprocessing is already loaded: it is the one doing the forking then.
    handle = _state.current_handle()
    util = sys.modules.get("multiprocessing.util")
    if handle is None or util is None or handle in _mp_registered:
        return
    _mp_registered.add(handle)
    util.register_after_fork(handle, _arm_multiprocessing_exit)


def _arm_multiprocessing_exit(handle: TelemetryHandle) -> None:
    util = sys.modules.get("multiprocessing.util")
    if util is not None and _state.current_handle() is handle:
        util.Finalize(handle, shutdown_at_exit, exitpriority=10)


# Only the forking thread exists in a child: a lock another thread held at that
# instant would stay held forever.
fork.on_fork(before=_before_fork, after_in_child=renew_locks_after_fork)


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
            one (e.g. the SDK's ``InMemorySpanExporter`` in tests); instead of
            all of them when ``config.exporter`` names several.
        metric_reader: Use this reader for metrics instead of the configured
            exporter(s) (e.g. ``InMemoryMetricReader``).
        export_strategy: Overrides ``config.export_strategy``: a registered
            name, a callable ``strategy(config, rank, world_size) -> bool``
            (0.1.0), an object with ``should_export(rank, world_size, config)``,
            or a function whose first parameter is named ``rank``, called as
            ``(rank, world_size, config)``.
        _allow_reinit: Replace an active set-up (shutting it down) instead of
            raising.
        log_exporter: Use this exporter for log records instead of the
            configured one(s) (e.g. the SDK's ``InMemoryLogRecordExporter``);
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
    global _atexit_registered

    # Phase 1: validate. Nothing global may change before this phase ends.
    if not isinstance(config, NemoLensConfig):
        raise TypeError(
            f"setup_telemetry() needs a NemoLensConfig, got {type(config).__name__}; "
            "build one with NemoLensConfig(...) or NemoLensConfig.from_env()"
        )
    if not isinstance(_allow_reinit, bool):
        raise TypeError(f"_allow_reinit must be a bool, got {_allow_reinit!r}")
    rank, world_size = check_rank(rank, world_size)
    if export_strategy is None:
        config.validate()
    else:
        config._check_fields()
    extra_attributes = check_resource_attributes(resource_attributes)
    check_components(span_exporter, metric_reader, log_exporter)

    if not config.enabled:
        with _handle.LOCK:
            check_guard(_allow_reinit)
            previous = _state.current_handle()
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
    # An export_rank at or beyond world_size is not an error (v0.2.0): under
    # single_rank no rank matches it, and an export_strategy= override still decides.
    groups = config.resolved_span_groups if config.traces_enabled else frozenset()
    resolved = config.resolved()
    strategy = resolve_strategy(resolved, export_strategy)
    exporting = export_decision(strategy, resolved, rank, world_size)
    if not exporting and not resolved.spans_on_every_rank:
        return _publish_quiet_rank(resolved, rank, world_size, _allow_reinit)
    exporter_names = resolved.exporters
    trace_path = resolved.format_trace_file(rank) if "file" in exporter_names else None
    signals: list[Signal] = []
    if "otlp" in exporter_names and exporting:
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
    with _handle.LOCK:
        check_guard(_allow_reinit)

    # Phase 2: build, still without touching global state.
    try:
        from nemo.lens._sdk.pipeline import build_pipeline
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
    with _handle.LOCK:
        try:
            # Another thread may have set up while this one was building.
            check_guard(_allow_reinit)
        except RuntimeError:
            pipeline.shutdown(_TESTING_SHUTDOWN_TIMEOUT_MS)
            raise
        previous = _state.current_handle()
        if previous is not None:
            previous.shutdown()
        from nemo.lens._core import hub
        from nemo.lens._sdk.global_providers import GLOBAL_METER_PROVIDER, GLOBAL_TRACER_PROVIDER

        if pipeline.tracer_provider is not None:
            # Processors added to the global provider while no set-up was active.
            GLOBAL_TRACER_PROVIDER.adopt(pipeline.tracer_provider)
        hub.publish(
            pipeline.tracer_provider,
            pipeline.meter_provider,
            pipeline.logger_provider,
            tracer_global=GLOBAL_TRACER_PROVIDER,
            meter_global=GLOBAL_METER_PROVIDER,
        )
        _state.claim_setup(False)
        state.set_span_group_classes(resolved.span_group_cls)
        state.set_enabled_span_groups(groups)
        _state.use_tracer_provider(pipeline.tracer_provider)
        _state.set_current_handle(handle)
        if resolved.handle_signals:
            _install_signal_handlers(handle)
        if not _atexit_registered:
            # Our hook replaces the SDK's (disabled in providers): it is bounded,
            # where the SDK's can hold up interpreter exit for 30 s on a dead collector.
            atexit.register(shutdown_at_exit)
            _atexit_registered = True
    _logger.info(
        "nemo.lens: telemetry set up (rank %d/%d, run %s, exporting=%s, exporter=%s, groups=%s)",
        rank,
        world_size,
        resolved.run_id,
        handle.is_exporting,
        ",".join(exporter_names),
        ",".join(sorted(groups)) or "-",
    )
    return handle


def _publish_quiet_rank(
    config: NemoLensConfig, rank: int, world_size: int, allow_reinit: bool
) -> TelemetryHandle:
    """Set up a rank the export strategy leaves out: it enables no span group.

    As in nemo-lens v0.2.0, the ranks that send nothing pay nothing: every primitive
    yields ``None`` and nothing of the SDK is imported (``spans_on_every_rank`` makes
    real spans there instead). The handle is still the current one, so a second
    set-up is refused as on any rank.
    """
    handle = TelemetryHandle(
        config=config,
        rank=rank,
        world_size=world_size,
        enabled_groups=frozenset(),
        is_exporting=False,
        pipeline=None,
    )
    with _handle.LOCK:
        check_guard(allow_reinit)
        previous = _state.current_handle()
        if previous is not None:
            previous.shutdown()
        state.set_span_group_classes(config.span_group_cls)
        state.set_enabled_span_groups(())
        _state.set_current_handle(handle)
        _state.claim_setup(False)
    _logger.info(
        "nemo.lens: telemetry set up on a rank that does not export (rank %d/%d, run %s): "
        "no span group enabled",
        rank,
        world_size,
        config.run_id,
    )
    return handle


# -- nemo.lens.handle._INITIALIZED (v0.2.0's set-up flag) ----------------------------------


def initialised() -> bool:
    """What v0.2.0's ``nemo.lens.handle._INITIALIZED`` says: whether an enabled set-up is
    active (so that another one would be refused)."""
    return _state.current_handle() is not None or _state.setup_claimed()


def set_initialised(value: bool) -> None:
    """Assign v0.2.0's ``nemo.lens.handle._INITIALIZED``.

    ``False`` -- what upstream's test fixtures do between tests to allow the next set-up
    -- shuts the active set-up down (briefly: it flushes to whatever exporter it had)
    and forgets it, so the next set-up starts as in a fresh process. ``True`` makes the
    next enabled set-up refuse, as if one had run.
    """
    if value:
        _state.claim_setup(True)
        return
    _state.claim_setup(False)
    with _handle.LOCK:
        handle = _state.current_handle()
    if handle is not None:
        handle.shutdown(_TESTING_SHUTDOWN_TIMEOUT_MS)


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
        version = _state.SCOPE_VERSION
    if _state.current_handle() is not None:
        from nemo.lens._core.hub import TRACER_HUB

        return TRACER_HUB.get_tracer(name, version)
    return trace.get_tracer(name, version)


def get_meter(name: str = _SCOPE_NAME, version: str | None = None) -> metrics.Meter:
    """Return a meter for instrumentation scope *name* (see :func:`get_tracer`).

    Instruments created from it while telemetry is set up are recreated on the
    new provider when set-up is replaced.
    """
    if version is None and name == _SCOPE_NAME:
        version = _state.SCOPE_VERSION
    if _state.current_handle() is not None:
        from nemo.lens._core.hub import METER_HUB

        return METER_HUB.get_meter(name, version)
    return metrics.get_meter(name, version or "")


def reset_for_testing() -> None:
    """Return the process to its state before any set-up (tests only).

    Shuts down the installed handle (never raising, short timeout), forgets it,
    releases OpenTelemetry's globals that nemo.lens claimed, disables every
    span group, restores the default tracer and forgets custom export
    strategies.
    """
    with _handle.LOCK:
        handle = _state.current_handle()
    if handle is not None:
        try:
            handle.shutdown(_TESTING_SHUTDOWN_TIMEOUT_MS)
        except Exception:
            _logger.exception("nemo.lens: shutdown during test reset failed")
    with _handle.LOCK:
        _state.set_current_handle(None)
        _state.claim_setup(False)
    from nemo.lens._core import hub

    hub.restore_otel_globals_for_testing()
    _forget_custom_strategies()
    state.set_enabled_span_groups(())
    _state.reset_span_group_classes()
    _state.use_tracer_provider(None)


def _forget_custom_strategies() -> None:
    """Unregister every custom export strategy and restore replaced built-ins."""
    from nemo.lens import strategies

    for name, strategy in strategies.registered_strategies().items():
        builtin = strategies.BUILTIN_STRATEGIES.get(name)
        if builtin is None:
            strategies.unregister_export_strategy(name)
        elif strategy is not builtin:
            strategies.register_export_strategy(name, builtin, allow_override=True)
