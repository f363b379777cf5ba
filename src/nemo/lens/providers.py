"""Installing nemo.lens's providers by hand: 0.1.0's :func:`build_providers` and
:func:`build_noop_providers`, through set-up, so the rules are the same. This module
imports the OpenTelemetry SDK."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from opentelemetry.sdk.metrics.export import MetricExporter, MetricReader
from opentelemetry.sdk.trace.export import SpanExporter
from opentelemetry.util.types import AttributeValue

from nemo.lens._core.destinations import Signal
from nemo.lens._names import rehome
from nemo.lens._sdk.exporters.factory import create_exporter
from nemo.lens._sdk.open_spans import OpenSpanTracker
from nemo.lens._sdk.pipeline import Pipeline, build_pipeline
from nemo.lens._sdk.processors import (
    FILE_MAX_EXPORT_BATCH_SIZE,
    FILE_MAX_QUEUE_SIZE,
    OTLP_MAX_EXPORT_BATCH_SIZE,
    OTLP_MAX_QUEUE_SIZE,
    SeedIndependentIdGenerator,
)
from nemo.lens.config import NemoLensConfig
from nemo.lens.handle import TelemetryHandle

__all__ = [
    "FILE_MAX_EXPORT_BATCH_SIZE",
    "FILE_MAX_QUEUE_SIZE",
    "OTLP_MAX_EXPORT_BATCH_SIZE",
    "OTLP_MAX_QUEUE_SIZE",
    "Pipeline",
    "SeedIndependentIdGenerator",
    "build_noop_providers",
    "build_pipeline",
    "build_providers",
]


def build_providers(
    config: NemoLensConfig,
    rank: int = 0,
    world_size: int = 1,
    resource_attributes: Mapping[str, AttributeValue] | None = None,
    span_exporter: SpanExporter | None = None,
    metric_reader: MetricReader | None = None,
) -> TelemetryHandle:
    """Install the SDK providers as set-up does on an exporting rank (0.1.0's helper).

    Runs :func:`nemo.lens.setup_telemetry` for *config* as if telemetry were
    enabled and this rank exported, replacing an active set-up, and leaves the
    enabled span groups as they were (0.1.0's helper did not touch them; set-up
    enables them). Everything is validated first, as set-up does. Returns the
    handle (0.1.0 returned ``None``); shut it down, or let the exit hook do it.
    """
    from nemo.lens import handle, state
    from nemo.lens.strategies import AllRanksStrategy

    if not isinstance(config, NemoLensConfig):
        raise TypeError(
            f"build_providers() needs a NemoLensConfig, got {type(config).__name__}; "
            "build one with NemoLensConfig(...) or NemoLensConfig.from_env()"
        )
    groups = state.enabled_span_groups()
    installed = handle.setup_telemetry(
        dataclasses.replace(config, enabled=True),
        rank,
        world_size,
        resource_attributes,
        span_exporter,
        metric_reader,
        export_strategy=AllRanksStrategy(),
        _allow_reinit=True,
    )
    state.set_enabled_span_groups(groups)
    return installed


def build_noop_providers() -> None:
    """Make the global providers no-ops (0.1.0's helper for silent ranks).

    Shuts down an active set-up (flushing what it buffered) and makes OpenTelemetry's
    global tracer and meter providers its no-op ones, as upstream's helper did; the next
    set-up replaces them. Globals the application set itself stay as they are.
    """
    from opentelemetry import metrics, trace

    from nemo.lens._core import handle, state

    current = state.current_handle()
    if current is not None:
        current.shutdown()
    handle.install_globals(trace.NoOpTracerProvider(), metrics.NoOpMeterProvider(), None)


class _OpenSpanCloser(OpenSpanTracker):
    """Upstream-internal: a span processor that ends the spans still open when its provider
    shuts down (marked truncated, as set-up's pipeline does), for a provider built by hand."""

    def shutdown(self) -> None:
        self.close()


def _one_exporter(signal: Signal, config: NemoLensConfig) -> Any:
    names = config.exporters
    if len(names) != 1:
        raise ValueError(
            f"exporter {config.exporter!r} names {len(names)} exporters; this upstream helper "
            "builds one: pass a single name, or let setup_telemetry() build them all"
        )
    path = config.resolved().format_trace_file(0) if names[0] == "file" else None
    return create_exporter(signal, names[0], path=path, console_format=config.console_format)


# Upstream-internal, kept because its tests (and code copied from them) call them: the
# exporter set-up would create for one exporter name, the OTLP class by the protocol variables.
def _build_span_exporter(config: NemoLensConfig) -> SpanExporter | None:
    return _one_exporter("traces", config)  # type: ignore[no-any-return]


def _build_metric_exporter(config: NemoLensConfig) -> MetricExporter | None:
    return _one_exporter("metrics", config)  # type: ignore[no-any-return]


rehome(globals(), __all__)
