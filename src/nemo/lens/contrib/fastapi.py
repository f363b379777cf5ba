"""Server spans for FastAPI apps, through nemo.lens's providers (``nemo-lens[fastapi]``).

Each request's span continues the caller's trace (its ``traceparent``); the handler's own
spans become its children.
"""

from __future__ import annotations

from typing import Any

from opentelemetry import metrics, trace

from nemo.lens.contrib._extras import import_extra
from nemo.lens.contrib._providers import resolve_providers

__all__ = ["instrument_fastapi", "uninstrument_fastapi"]

_MODULE = "opentelemetry.instrumentation.fastapi"
_EXTRA = "fastapi"


def instrument_fastapi(
    app: Any,
    tracer_provider: trace.TracerProvider | str | None = None,
    meter_provider: metrics.MeterProvider | None = None,
    *,
    group: str | None = None,
    service_name: str | None = None,
    **options: Any,
) -> None:
    """Trace every request *app* (a ``fastapi.FastAPI``) handles.

    0.1.0's call, ``instrument_fastapi(app, service_name="nemo-gym")`` (the
    name also positionally), works as it did: the spans' service is the one
    set-up was configured with (``NemoLensConfig.service_name``), so the name
    is accepted and not used, as in 0.1.0.

    Args:
        app: The application to instrument (once; a second call only logs a
            warning from the instrumentation).
        tracer_provider: Where spans go; ``None`` is nemo.lens's provider,
            which follows ``setup_telemetry``, so the app may be instrumented
            before set-up.
        meter_provider: Where the HTTP server metrics go; ``None`` is
            nemo.lens's provider.
        group: A span-group name (e.g. ``GymSpanGroup.SERVER``): request spans
            are made only while it is enabled. While it is not, the caller's
            trace context still reaches the handler.
        **options: Passed on to ``FastAPIInstrumentor.instrument_app``, e.g.
            ``excluded_urls="/health,/metrics"`` or ``server_request_hook``.

    Raises:
        MissingExtraError: ``opentelemetry-instrumentation-fastapi`` (or
            FastAPI) is not installed.
        TypeError: a provider argument is not a provider.
    """
    if isinstance(tracer_provider, str):  # 0.1.0's second parameter: the service name
        if service_name is not None:
            raise TypeError("instrument_fastapi() got the service name twice")
        service_name, tracer_provider = tracer_provider, None
    if service_name is not None and not isinstance(service_name, str):
        raise TypeError(f"instrument_fastapi(service_name=...) must be a str, got {service_name!r}")
    instrumentation = import_extra(_MODULE, extra=_EXTRA, feature="instrument_fastapi()")
    tracers, meters = resolve_providers(
        tracer_provider, meter_provider, group, helper="instrument_fastapi"
    )
    instrumentation.FastAPIInstrumentor.instrument_app(
        app, tracer_provider=tracers, meter_provider=meters, **options
    )


def uninstrument_fastapi(app: Any) -> None:
    """Remove what :func:`instrument_fastapi` added to *app*."""
    instrumentation = import_extra(_MODULE, extra=_EXTRA, feature="uninstrument_fastapi()")
    instrumentation.FastAPIInstrumentor.uninstrument_app(app)
