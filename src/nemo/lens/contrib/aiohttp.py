"""Client spans and ``traceparent`` headers for aiohttp requests (``nemo-lens[aiohttp]``).

:func:`instrument_aiohttp_client` traces every ``ClientSession``, :func:`aiohttp_trace_config`
one session; the current context goes out with each request, so the server continues it.
"""

from __future__ import annotations

from typing import Any

from opentelemetry import metrics, trace

from nemo.lens.contrib._extras import import_extra
from nemo.lens.contrib._providers import provider_arguments, resolve_providers

__all__ = ["aiohttp_trace_config", "instrument_aiohttp_client", "uninstrument_aiohttp_client"]

_MODULE = "opentelemetry.instrumentation.aiohttp_client"
_EXTRA = "aiohttp"


def instrument_aiohttp_client(
    tracer_provider: trace.TracerProvider | None = None,
    meter_provider: metrics.MeterProvider | None = None,
    *,
    group: str | None = None,
    **options: Any,
) -> None:
    """Trace the requests of every ``aiohttp.ClientSession`` created from now on (to change
    the arguments, call :func:`uninstrument_aiohttp_client` first).

    Args:
        tracer_provider: Where spans go; ``None`` is nemo.lens's provider, which follows
            ``setup_telemetry``.
        meter_provider: Where the HTTP client metrics go; ``None`` is nemo.lens's provider.
        group: A span-group name (``GymSpanGroup.HTTP_CLIENT``): request spans are made only
            while it is enabled; the current trace context is sent either way.
        **options: Passed on to ``AioHttpClientInstrumentor().instrument`` (``url_filter``,
            ``request_hook``, ...).

    Raises:
        MissingExtraError: ``opentelemetry-instrumentation-aiohttp-client`` (or aiohttp) is
            missing.
        TypeError: a provider argument is not a provider.
    """
    instrumentation = import_extra(_MODULE, extra=_EXTRA, feature="instrument_aiohttp_client()")
    tracers, meters = resolve_providers(
        tracer_provider, meter_provider, group, helper="instrument_aiohttp_client"
    )
    instrument = instrumentation.AioHttpClientInstrumentor().instrument
    chosen = tracer_provider is not None or meter_provider is not None or group is not None
    arguments = provider_arguments(
        instrument, tracers, meters, chosen=chosen, helper="instrument_aiohttp_client"
    )
    instrument(**arguments, **options)


def uninstrument_aiohttp_client() -> None:
    """Stop tracing sessions created from now on (sessions that exist keep their tracing)."""
    instrumentation = import_extra(_MODULE, extra=_EXTRA, feature="uninstrument_aiohttp_client()")
    instrumentation.AioHttpClientInstrumentor().uninstrument()


def aiohttp_trace_config(
    tracer_provider: trace.TracerProvider | None = None,
    meter_provider: metrics.MeterProvider | None = None,
    *,
    group: str | None = None,
    **options: Any,
) -> Any:
    """Return an ``aiohttp.TraceConfig`` that traces the requests of one session
    (``ClientSession(trace_configs=[aiohttp_trace_config()])``). Arguments as for
    :func:`instrument_aiohttp_client`; *options* go to ``create_trace_config``."""
    instrumentation = import_extra(_MODULE, extra=_EXTRA, feature="aiohttp_trace_config()")
    tracers, meters = resolve_providers(
        tracer_provider, meter_provider, group, helper="aiohttp_trace_config"
    )
    return instrumentation.create_trace_config(
        tracer_provider=tracers, meter_provider=meters, **options
    )
