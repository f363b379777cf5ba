"""The providers the HTTP helpers hand to OpenTelemetry's instrumentations.

By default OpenTelemetry's global ones (its proxies before set-up, whose tracers follow the
first set-up they are used under). :class:`GatedTracerProvider` ties an instrumentation to a
span group, checked each time a span would start; its spans carry the group's tags.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

from opentelemetry import metrics, trace
from opentelemetry.context import Context
from opentelemetry.trace import Link, NonRecordingSpan, Span, SpanKind
from opentelemetry.util.types import Attributes

from nemo.lens._core import state as _state
from nemo.lens._core.spans import CurrentSpanTracer, start_span

__all__ = ["GatedTracerProvider", "provider_arguments", "resolve_providers"]


class _GatedTracer(CurrentSpanTracer):
    """Starts real spans while *group* is enabled, pass-through ones otherwise."""

    def __init__(self, tracer: trace.Tracer, group: str) -> None:
        self._tracer = tracer
        self._group = group

    def start_span(
        self,
        name: str,
        context: Context | None = None,
        kind: SpanKind = SpanKind.INTERNAL,
        attributes: Attributes = None,
        links: Sequence[Link] | None = None,
        start_time: int | None = None,
        record_exception: bool = True,
        set_status_on_exception: bool = True,
    ) -> Span:
        if self._group not in _state.enabled:
            # No span, but the parent's identity passes through: made current, it
            # parents the application's own spans and is what gets injected into
            # outgoing headers, so the caller's trace is not cut here.
            return NonRecordingSpan(trace.get_current_span(context).get_span_context())
        return start_span(
            self._tracer,
            name,
            kind,
            links,
            attributes,
            self._group,
            context=context,
            start_time=start_time,
            record_exception=record_exception,
            set_status_on_exception=set_status_on_exception,
        )


class GatedTracerProvider(trace.TracerProvider):
    """A tracer provider whose spans exist only while span group *group* is enabled."""

    def __init__(self, delegate: trace.TracerProvider, group: str) -> None:
        if not isinstance(group, str) or not group:
            raise TypeError(f"group must be a span-group name (a non-empty str), got {group!r}")
        self._delegate = delegate
        self._group = group

    @property
    def group(self) -> str:
        """The span group that gates this provider's spans."""
        return self._group

    def get_tracer(
        self,
        instrumenting_module_name: str,
        instrumenting_library_version: str | None = None,
        schema_url: str | None = None,
        attributes: Attributes = None,
    ) -> trace.Tracer:
        """A gated tracer over the delegate's tracer for this instrumentation scope."""
        tracer = self._delegate.get_tracer(
            instrumenting_module_name, instrumenting_library_version, schema_url, attributes
        )
        return _GatedTracer(tracer, self._group)


def resolve_providers(
    tracer_provider: trace.TracerProvider | None,
    meter_provider: metrics.MeterProvider | None,
    group: str | None,
    *,
    helper: str,
) -> tuple[trace.TracerProvider, metrics.MeterProvider]:
    """Fill in OpenTelemetry's global providers for missing ones; apply the *group* gate.

    Raises :class:`TypeError` naming *helper* when a provider is of the wrong kind
    (a common slip: a service name where the provider goes).
    """
    if tracer_provider is not None and not isinstance(tracer_provider, trace.TracerProvider):
        raise TypeError(
            f"{helper}(tracer_provider=...) must be an OpenTelemetry TracerProvider or None "
            f"(None: nemo.lens's provider), got {tracer_provider!r}; the service name comes "
            "from setup_telemetry's config (NemoLensConfig.service_name)"
        )
    if meter_provider is not None and not isinstance(meter_provider, metrics.MeterProvider):
        raise TypeError(
            f"{helper}(meter_provider=...) must be an OpenTelemetry MeterProvider or None "
            f"(None: nemo.lens's provider), got {meter_provider!r}"
        )
    tracers = trace.get_tracer_provider() if tracer_provider is None else tracer_provider
    meters = metrics.get_meter_provider() if meter_provider is None else meter_provider
    if group is not None:
        tracers = GatedTracerProvider(tracers, group)
    return tracers, meters


def _accepts(method: Callable[..., Any], name: str) -> bool:
    try:
        parameters = inspect.signature(method).parameters.values()
    except (TypeError, ValueError):  # no signature to read: assume the usual one
        return True
    return any(p.name == name or p.kind is p.VAR_KEYWORD for p in parameters)


def provider_arguments(
    method: Callable[..., Any],
    tracers: trace.TracerProvider,
    meters: metrics.MeterProvider,
    *,
    chosen: bool,
    helper: str,
) -> dict[str, Any]:
    """The provider keywords *method* (an instrumentor's) takes: an instrumentor that takes
    none (an old or a stand-in one) is called without them and uses the global providers,
    which are nemo.lens's. *chosen*: the caller asked for a provider or a group gate, which
    such an instrumentor cannot honour, so that is a :class:`TypeError` naming the fix."""
    arguments: dict[str, Any] = {}
    for name, provider in (("tracer_provider", tracers), ("meter_provider", meters)):
        if _accepts(method, name):
            arguments[name] = provider
        elif chosen:
            raise TypeError(
                f"{helper}(): the installed instrumentor's {method.__name__}() takes no "
                f"{name}, so the provider or group= given cannot be applied; upgrade the "
                "OpenTelemetry instrumentation package, or drop the provider and group "
                "arguments to use nemo.lens's providers"
            )
    return arguments
