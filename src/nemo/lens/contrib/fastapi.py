"""Server spans for FastAPI apps, through nemo.lens's providers (``nemo-lens[fastapi]``).

Each request's span continues the caller's trace (its ``traceparent``); the handler's own
spans become its children.
"""

from __future__ import annotations

from typing import Any

from opentelemetry import metrics, trace

from nemo.lens.contrib._extras import import_extra
from nemo.lens.contrib._providers import provider_arguments, resolve_providers

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
    """Trace every request *app* (a ``fastapi.FastAPI``) handles (once per app).

    Args:
        app: The application to instrument.
        tracer_provider: Where spans go; ``None`` is nemo.lens's provider, which follows
            ``setup_telemetry``, so the app may be instrumented before set-up. (0.1.0's
            ``instrument_fastapi(app, "nemo-gym")`` passes the service name here.)
        meter_provider: Where the HTTP server metrics go; ``None`` is nemo.lens's provider.
        group: A span-group name (``GymSpanGroup.SERVER``): request spans are made only
            while it is enabled; the caller's trace context reaches the handler either way.
        service_name: Accepted and not used, as in 0.1.0: the service is set-up's.
        **options: Passed on to ``FastAPIInstrumentor.instrument_app``
            (``excluded_urls="/health,/metrics"``, ``server_request_hook``, ...).

    Raises:
        MissingExtraError: ``opentelemetry-instrumentation-fastapi`` (or FastAPI) is missing.
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
    instrument_app = instrumentation.FastAPIInstrumentor.instrument_app
    chosen = tracer_provider is not None or meter_provider is not None or group is not None
    arguments = provider_arguments(
        instrument_app, tracers, meters, chosen=chosen, helper="instrument_fastapi"
    )
    instrument_app(app, **arguments, **options)


def uninstrument_fastapi(app: Any) -> None:
    """Remove what :func:`instrument_fastapi` added to *app*."""
    instrumentation = import_extra(_MODULE, extra=_EXTRA, feature="uninstrument_fastapi()")
    instrumentation.FastAPIInstrumentor.uninstrument_app(app)
