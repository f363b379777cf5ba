"""Set-up: :func:`setup_telemetry`, in three phases, above both sides of the wall.

:func:`validate` checks everything and changes nothing; :func:`build` builds the SDK side's
pipeline (the first import of the SDK) and still changes nothing global; :func:`publish`
makes the result the process's in one step (docs/architecture.md).
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from opentelemetry.util.types import AttributeValue

from nemo.lens import _compat, semconv, state
from nemo.lens._core import handle as _handle
from nemo.lens._core import signals as _signals
from nemo.lens._core import state as _state
from nemo.lens._core.destinations import (
    Signal,
    check_otlp_environment,
    register_otlp_secrets,
    shown_path,
)
from nemo.lens._core.handle import TelemetryHandle, shutdown_at_exit
from nemo.lens._core.setup_checks import (
    StrategyArgument,
    check_components,
    check_guard,
    check_rank,
    check_resource_attributes,
    check_trace_files,
    resolve_strategy,
)
from nemo.lens.config import NemoLensConfig
from nemo.lens.resources.encoding import OTEL_RESOURCE_ATTRIBUTES, decode_resource_attributes
from nemo.lens.spec import spec_in_effect
from nemo.lens.strategies import export_decision

if TYPE_CHECKING:
    from opentelemetry.sdk._logs.export import LogRecordExporter
    from opentelemetry.sdk.metrics.export import MetricReader
    from opentelemetry.sdk.trace.export import SpanExporter

    from nemo.lens._sdk.pipeline import Pipeline

__all__ = [
    "RANK_KEYS",
    "WORLD_SIZE_KEYS",
    "Plan",
    "StrategyArgument",
    "build",
    "publish",
    "rank_from_attributes",
    "setup_telemetry",
    "validate",
]

RANK_KEYS: Final = (semconv.NV_DL_RANK, semconv.DL_RANK)
"""The resource attributes a rank-less set-up reads this process's rank from (upstream's
later key first)."""
WORLD_SIZE_KEYS: Final = (semconv.NV_DL_WORLD_SIZE, semconv.DL_WORLD_SIZE)
"""The resource attributes a rank-less set-up reads the job's world size from."""

_logger = logging.getLogger("nemo.lens.handle")
_atexit_registered = False


@dataclass(frozen=True)
class Plan:
    """What phase 1 decided, every part of it checked."""

    config: NemoLensConfig
    """The config, with ``run_id`` resolved."""
    rank: int
    world_size: int
    allow_reinit: bool
    groups: frozenset[str]
    """The span groups this rank enables."""
    exporting: bool
    """The export strategy's answer for this rank (``False`` when disabled)."""
    builds: bool
    """Whether phase 2 runs: enabled, and exporting or ``spans_on_every_rank``."""
    trace_path: str | None = None
    otlp_signals: tuple[Signal, ...] = ()
    """The signals whose OTLP exporter set-up creates (their variables are checked)."""
    resource_attributes: Mapping[str, AttributeValue] | None = None
    span_exporter: SpanExporter | None = None
    metric_reader: MetricReader | None = None
    log_exporter: LogRecordExporter | None = None
    identity_warning: str | None = None
    """What a rank-less set-up could not find out about this process (logged when published)."""


class _NotPassed(int):
    """A default that reads as v0.2.0's (``0``, ``1``) but tells "not passed" apart by identity."""

    __slots__ = ()

    def __repr__(self) -> str:
        return int.__repr__(self)


_RANK_NOT_PASSED: Final = _NotPassed(0)
_WORLD_SIZE_NOT_PASSED: Final = _NotPassed(1)


def setup_telemetry(
    config: NemoLensConfig,
    rank: int = _RANK_NOT_PASSED,
    world_size: int = _WORLD_SIZE_NOT_PASSED,
    resource_attributes: Mapping[str, AttributeValue] | None = None,
    span_exporter: SpanExporter | None = None,
    metric_reader: MetricReader | None = None,
    export_strategy: StrategyArgument | None = None,
    _allow_reinit: bool = False,
    log_exporter: LogRecordExporter | None = None,
) -> TelemetryHandle:
    """Set up telemetry for this process and return its :class:`TelemetryHandle`.

    A call that passes none of *rank*, *world_size* and *export_strategy* is
    **rank-less** (upstream's next API): the rank and world size are read from
    ``nv.dl.rank``/``nv.dl.world_size`` (or ``dl.rank``/``dl.world_size``) in
    *resource_attributes*, else in ``OTEL_RESOURCE_ATTRIBUTES``; every enabled
    process exports; and a rank not found is logged (INFO) and reported as
    rank 0 (of 1). A call that passes any of the three is v0.2.0's: a rank
    not passed is 0, a world size 1, and the export strategy decides.

    Args:
        config: What to set up; ``config.enabled=False`` installs nothing.
        rank: This process's global rank (see above when not passed).
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
            strategy, OTLP protocol, rank out of range, bad ``trace_file``), or a
            rank-less set-up found a rank or world size that is not a whole
            number, or two keys that disagree.
        RuntimeError: telemetry is already set up and ``_allow_reinit`` is false.
        ImportError: telemetry is enabled but the SDK extra is not installed.
    """
    plan = validate(
        config,
        rank,
        world_size,
        resource_attributes,
        span_exporter,
        metric_reader,
        export_strategy,
        _allow_reinit,
        log_exporter,
    )
    return publish(plan, build(plan) if plan.builds else None)


def validate(
    config: object,
    rank: object,
    world_size: object,
    resource_attributes: Mapping[str, AttributeValue] | None,
    span_exporter: SpanExporter | None,
    metric_reader: MetricReader | None,
    export_strategy: StrategyArgument | None,
    allow_reinit: object,
    log_exporter: LogRecordExporter | None,
) -> Plan:
    """Phase 1: check everything :func:`setup_telemetry` was given, once; change nothing."""
    if not isinstance(config, NemoLensConfig):
        raise TypeError(
            f"setup_telemetry() needs a NemoLensConfig, got {type(config).__name__}; "
            "build one with NemoLensConfig(...) or NemoLensConfig.from_env()"
        )
    if not isinstance(allow_reinit, bool):
        raise TypeError(f"_allow_reinit must be a bool, got {allow_reinit!r}")
    rankless = (
        rank is _RANK_NOT_PASSED
        and world_size is _WORLD_SIZE_NOT_PASSED
        and export_strategy is None
    )
    extra_attributes = check_resource_attributes(resource_attributes)
    identity_warning = None
    if rankless:
        rank, world_size, identity_warning, known = rank_from_attributes(extra_attributes)
    rank, world_size = check_rank(rank, world_size)
    # A default not overridden is still its marker: keep a plain int from here on.
    rank, world_size = int(rank), int(world_size)
    if not rankless:
        known = {semconv.NV_DL_RANK: rank, semconv.NV_DL_WORLD_SIZE: world_size}
    # Upstream's next keys are sent beside dl.rank when known; a rank made up is not.
    extra_attributes = {**known, **(extra_attributes or {})}
    groups = config._check_fields()
    strategy = resolve_strategy(config, export_strategy)
    check_components(span_exporter, metric_reader, log_exporter)
    with _handle.LOCK:
        check_guard(allow_reinit)
    if not config.enabled:
        return Plan(config, rank, world_size, allow_reinit, frozenset(), False, builds=False)
    if config.handle_signals and threading.current_thread() is not threading.main_thread():
        raise RuntimeError(
            "NemoLensConfig.handle_signals=True needs setup_telemetry() to be called from the "
            "main thread (Python lets only the main thread install signal handlers); call it "
            "there, or set handle_signals=False"
        )
    resolved = config.resolved()
    # An export_rank at or beyond world_size is not an error (v0.2.0): under
    # single_rank no rank matches it, and an export_strategy= override still decides.
    exporting = rankless or export_decision(strategy, resolved, rank, world_size)
    if not exporting and not resolved.spans_on_every_rank:
        return Plan(resolved, rank, world_size, allow_reinit, frozenset(), False, builds=False)
    names = resolved.exporters
    # The signals whose exporters set-up creates: on, and not replaced by one passed in.
    wanted: tuple[tuple[Signal, bool, object], ...] = (
        ("traces", resolved.traces_enabled, span_exporter),
        ("metrics", resolved.metrics_enabled, metric_reader),
        ("logs", resolved.logs_enabled, log_exporter),
    )
    made = tuple(s for s, on, replaced in wanted if exporting and on and replaced is None)
    signals = made if "otlp" in names else ()
    for signal in signals:
        # The protocol, headers, timeout, compression and endpoint would otherwise fail
        # deep in the exporter's constructor, or print a malformed header (and the token in
        # it) to stderr.
        check_otlp_environment(signal)
    trace_path = resolved.format_trace_file(rank) if "file" in names else None
    if trace_path is not None:
        check_trace_files(resolved, trace_path, made)
    return Plan(
        resolved,
        rank,
        world_size,
        allow_reinit,
        groups if resolved.traces_enabled else frozenset(),
        exporting,
        builds=True,
        trace_path=trace_path,
        otlp_signals=signals,
        resource_attributes=extra_attributes,
        span_exporter=span_exporter,
        metric_reader=metric_reader,
        log_exporter=log_exporter,
        identity_warning=identity_warning,
    )


def rank_from_attributes(
    attributes: Mapping[str, AttributeValue],
) -> tuple[int, int, str | None, dict[str, int]]:
    """Return the rank and world size a rank-less set-up reports, what it could not find,
    and what it found (under upstream's next keys, ``nv.dl.rank``, ``nv.dl.world_size``).

    Each is read from *attributes* if they hold one of its keys (:data:`RANK_KEYS`,
    :data:`WORLD_SIZE_KEYS`), else from ``OTEL_RESOURCE_ATTRIBUTES``. A rank not found is
    0, a world size not found one more than the rank; the third item then says so (a
    warning to log), else it is ``None``.

    Raises:
        ValueError: a value is not a whole number, or two keys of one source disagree.
    """
    sources = (
        ("resource_attributes", attributes),
        (
            OTEL_RESOURCE_ATTRIBUTES,
            decode_resource_attributes(os.environ.get(OTEL_RESOURCE_ATTRIBUTES, "")),
        ),
    )
    rank = _whole_number(sources, RANK_KEYS)
    world_size = _whole_number(sources, WORLD_SIZE_KEYS)
    known = {
        k[0]: v for k, v in ((RANK_KEYS, rank), (WORLD_SIZE_KEYS, world_size)) if v is not None
    }
    if rank is not None and world_size is not None:
        return rank, world_size, None, known
    missing = " and ".join(
        keys[0]
        for keys, value in ((RANK_KEYS, rank), (WORLD_SIZE_KEYS, world_size))
        if value is None
    )
    rank = 0 if rank is None else rank
    world_size = rank + 1 if world_size is None else world_size
    warning = (
        f"nemo.lens: setup_telemetry() was given no rank and found no {missing} in "
        f"resource_attributes or {OTEL_RESOURCE_ATTRIBUTES}, so this process reports rank "
        f"{rank} of {world_size} and cannot be told apart from other processes of the job "
        f"that report the same; pass resource_attributes={{'nv.dl.rank': rank, "
        f"'nv.dl.world_size': world_size}}, or set them in {OTEL_RESOURCE_ATTRIBUTES} "
        "(nemo.lens.resources.encode_resource_attributes writes it for a child process)"
    )
    return rank, world_size, warning, known


def _whole_number(
    sources: tuple[tuple[str, Mapping[str, object]], ...], keys: tuple[str, ...]
) -> int | None:
    """The whole number the first source holding one of *keys* holds (``None``: none does)."""
    for where, attributes in sources:
        found: dict[str, int] = {}
        for key in keys:
            if key in attributes:
                found[key] = _parse_whole_number(attributes[key], key, where)
        if len(set(found.values())) > 1:
            shown = ", ".join(f"{key}={value}" for key, value in found.items())
            raise ValueError(
                f"setup_telemetry: {where} holds {shown}, which disagree; "
                f"set one value, under {keys[0]}"
            )
        if found:
            return next(iter(found.values()))
    return None


def _parse_whole_number(value: object, key: str, where: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        if value >= 0:
            return int(value)
    elif isinstance(value, str) and value.strip().isascii() and value.strip().isdigit():
        return int(value.strip())
    raise ValueError(
        f"setup_telemetry: {key}={value!r} in {where} is not a whole number >= 0; "
        f"set it to this process's value (like {key}=0) or remove it"
    )


def build(plan: Plan) -> Pipeline:
    """Phase 2: build the SDK side's pipeline for *plan*; change nothing global."""
    try:
        from nemo.lens._sdk.pipeline import build_pipeline
    except ImportError as exc:
        raise ImportError(
            f"telemetry is enabled but the OpenTelemetry SDK could not be imported ({exc}); "
            "install it with pip install 'nemo-lens[sdk]'"
        ) from exc
    for signal in plan.otlp_signals:
        register_otlp_secrets(signal)
    try:
        return build_pipeline(
            plan.config,
            rank=plan.rank,
            world_size=plan.world_size,
            exporting=plan.exporting,
            trace_path=plan.trace_path,
            resource_attributes=plan.resource_attributes,
            span_exporter=plan.span_exporter,
            metric_reader=plan.metric_reader,
            log_exporter=plan.log_exporter,
        )
    except OSError as exc:
        # What phase 1 could not foresee (a file system that refuses at open, a place that
        # changed since): still the file exporter's path, named with the fix.
        if plan.trace_path is None:
            raise
        raise ValueError(
            f"the file exporter cannot open {shown_path(str(exc.filename or plan.trace_path))}: "
            f"{exc.strerror or exc}; set NEMO_LENS_TRACE_FILE (NemoLensConfig.trace_file) to "
            "a file in a directory this process may write"
        ) from exc


def publish(plan: Plan, pipeline: Pipeline | None) -> TelemetryHandle:
    """Phase 3: make *plan* (and *pipeline*, when phase 2 built one) the process's."""
    config = plan.config
    handle = TelemetryHandle(
        config=config,
        rank=plan.rank,
        world_size=plan.world_size,
        enabled_groups=plan.groups,
        is_exporting=pipeline is not None and plan.exporting and pipeline.exports,
        pipeline=pipeline,
    )
    with _handle.LOCK:
        try:
            # Another thread may have set up while this one was building.
            check_guard(plan.allow_reinit)
        except RuntimeError:
            if pipeline is not None:
                pipeline.shutdown(1000)  # nobody saw it: no need to wait long
            raise
        previous = _state.current_handle()
        if previous is not None:
            previous.shutdown()
        if pipeline is not None:
            _publish_pipeline(pipeline)
        if config.enabled:  # a disabled set-up is never the current one
            _compat.claim_setup(False)
            state.set_span_group_classes(config.span_group_cls)
            _state.set_current_handle(handle)
        if plan.builds and config.traces_enabled:
            # The spec is kept, so a namespace registered after set-up joins (upstream #43).
            spec = spec_in_effect(config.span_groups)
            _state.set_job_span_group_spec(spec, config.span_group_cls)
        else:
            state.set_enabled_span_groups(plan.groups)
        if pipeline is not None:
            _state.use_tracer_provider(pipeline.tracer_provider)
            if config.handle_signals:
                _install_signal_handlers(handle)
            _register_exit_hook()
    if config.enabled and plan.identity_warning is not None:
        # INFO, not WARNING: a single-process job (a demo, a notebook) is rank 0 of 1, as
        # v0.2.0 said, and a warning on stderr in every such job is noise (docs/migrating.md).
        _logger.info("%s", plan.identity_warning)
    if config.enabled:
        _logger.info(
            "nemo.lens: telemetry set up (rank %d/%d, run %s, exporting=%s, exporter=%s, "
            "groups=%s)",
            plan.rank,
            plan.world_size,
            config.run_id,
            handle.is_exporting,
            ",".join(config.exporters),
            ",".join(sorted(plan.groups)) or "-",
        )
    return handle


def _publish_pipeline(pipeline: Pipeline) -> None:
    _handle.install_globals(
        pipeline.tracer_provider, pipeline.meter_provider, pipeline.logger_provider
    )


def _register_exit_hook() -> None:
    global _atexit_registered
    if not _atexit_registered:
        # Our hook replaces the SDK's (disabled in providers): it is bounded, where
        # the SDK's can hold up interpreter exit for 30 s on a dead collector.
        atexit.register(shutdown_at_exit)
        _atexit_registered = True


def _install_signal_handlers(handle: TelemetryHandle) -> None:
    # Runs while publishing: a failure here must not leave set-up half done, so
    # it is reported and telemetry runs on without the handler.
    try:
        _signals.install(handle, flush=handle.force_flush, shutdown=handle.shutdown)
    except Exception:
        _logger.exception("nemo.lens: could not install the SIGTERM handler (handle_signals)")
