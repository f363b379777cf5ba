"""OpenTelemetry's global tracer and meter providers while nemo.lens is set up.

Other OpenTelemetry tools expect the global providers to be the SDK's: a backend's
``register()`` helper or an application adds its own span processor with
``trace.get_tracer_provider().add_span_processor(...)``, tests flush with
``trace.get_tracer_provider().force_flush()``, and code checks
``isinstance(..., opentelemetry.sdk.trace.TracerProvider)``. Yet OpenTelemetry lets a
process set each global once, and nemo.lens may be set up again
(``_allow_reinit``, tests), so the global cannot be one set-up's provider: tracers
cached at import time would stay bound to the first one.

So the globals nemo.lens claims are :class:`GlobalTracerProvider` and
:class:`GlobalMeterProvider`: SDK providers (subclasses, for ``isinstance``) that hold
nothing of their own. Their tracers and meters are the hubs' (:mod:`nemo.lens._core.hub`),
which follow every re-initialisation; everything else -- ``add_span_processor``,
``force_flush``, ``shutdown``, ``resource``, ``sampler``, ``id_generator`` and any other
attribute of the SDK's provider -- is the current set-up's provider's. A processor added
through the global tracer provider therefore sees every span of the current set-up from
then on (nemo.lens's recording path steps aside for it, as for a processor added to
``handle.tracer_provider``); one added while no set-up is active is attached to the next.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from opentelemetry import metrics as metrics_api
from opentelemetry import trace as trace_api
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider, sampling
from opentelemetry.sdk.trace.id_generator import IdGenerator
from opentelemetry.util.types import Attributes

from nemo.lens._core.hub import METER_HUB, TRACER_HUB

__all__ = [
    "GLOBAL_METER_PROVIDER",
    "GLOBAL_TRACER_PROVIDER",
    "GlobalMeterProvider",
    "GlobalTracerProvider",
]

_logger = logging.getLogger("nemo.lens.providers")


class GlobalTracerProvider(TracerProvider):
    """The SDK tracer provider OpenTelemetry's global is while nemo.lens is set up.

    Its tracers follow re-initialisation; the rest is the current set-up's provider's
    (see the module docstring). Without a current set-up it is a provider with no
    processors: its tracers make no-op spans and flushing has nothing to do.
    """

    # The SDK's __init__ is not called: this provider keeps no state of the SDK's.
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiting: list[SpanProcessor] = []

    @property
    def current(self) -> TracerProvider | None:
        """The SDK provider of the current set-up, if any."""
        delegate = TRACER_HUB.delegate
        return delegate if isinstance(delegate, TracerProvider) else None

    def get_tracer(
        self,
        instrumenting_module_name: str,
        instrumenting_library_version: str | None = None,
        schema_url: str | None = None,
        attributes: Attributes = None,
    ) -> trace_api.Tracer:
        """A tracer that follows nemo.lens's current provider (see :mod:`nemo.lens._core.hub`)."""
        return TRACER_HUB.get_tracer(
            instrumenting_module_name, instrumenting_library_version, schema_url, attributes
        )

    def add_span_processor(self, span_processor: SpanProcessor) -> None:
        """Add *span_processor* to the current set-up's provider (the next one's, if none)."""
        with self._lock:
            current = self.current
            if current is None:
                self._waiting.append(span_processor)
                _logger.info(
                    "nemo.lens: %r was added to the global tracer provider while no "
                    "set-up is active; it is attached to the next set-up",
                    span_processor,
                )
                return
        current.add_span_processor(span_processor)

    def adopt(self, provider: TracerProvider) -> None:
        """Attach the processors added while no set-up was active to *provider* (set-up's)."""
        with self._lock:
            waiting, self._waiting = self._waiting, []
        for processor in waiting:
            provider.add_span_processor(processor)

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Flush the current set-up's span processors (``True`` with none)."""
        current = self.current
        return True if current is None else current.force_flush(timeout_millis)

    def shutdown(self) -> None:
        """Shut the current set-up's tracer provider down, as the SDK's ``shutdown`` does.

        Spans still open are ended first and marked truncated. ``handle.shutdown()``
        does this too, within its timeout, along with the other signals.
        """
        current = self.current
        if current is not None:
            current.shutdown()

    @property
    def resource(self) -> Resource:
        """The current set-up's resource (an empty one without a set-up)."""
        current = self.current
        return Resource.get_empty() if current is None else current.resource

    @property
    def sampler(self) -> sampling.Sampler:  # type: ignore[override]
        """The current set-up's sampler (the SDK's default without a set-up)."""
        current = self.current
        return sampling.DEFAULT_ON if current is None else current.sampler

    @property
    def id_generator(self) -> IdGenerator:  # type: ignore[override]
        """The current set-up's id generator."""
        current = self.current
        if current is None:
            raise AttributeError("no nemo.lens set-up is active: there is no id generator")
        return current.id_generator

    def __getattr__(self, name: str) -> Any:
        # Only reached for what this class lacks: the SDK provider's other attributes
        # (some tools read private ones such as _active_span_processor).
        current = self.current
        if current is None or name.startswith("__"):
            raise AttributeError(name)
        return getattr(current, name)

    def __repr__(self) -> str:
        return f"<nemo.lens global TracerProvider -> {self.current!r}>"


class GlobalMeterProvider(MeterProvider):
    """The SDK meter provider OpenTelemetry's global is while nemo.lens is set up.

    Its meters (and their instruments) follow re-initialisation; ``force_flush``,
    ``shutdown`` and the SDK provider's other attributes are the current set-up's.
    """

    # The SDK's __init__ is not called: this provider keeps no state of the SDK's.
    def __init__(self) -> None:
        pass

    @property
    def current(self) -> MeterProvider | None:
        """The SDK provider of the current set-up, if any."""
        delegate = METER_HUB.delegate
        return delegate if isinstance(delegate, MeterProvider) else None

    def get_meter(
        self,
        name: str,
        version: str | None = None,
        schema_url: str | None = None,
        attributes: Attributes = None,
    ) -> metrics_api.Meter:
        """A meter whose instruments follow nemo.lens's current provider."""
        return METER_HUB.get_meter(name, version, schema_url, attributes)

    def force_flush(self, timeout_millis: float = 10_000) -> bool:
        """Collect and export the current set-up's metrics (``True`` without one)."""
        current = self.current
        return True if current is None else current.force_flush(timeout_millis)

    def shutdown(self, timeout_millis: float = 30_000) -> None:
        """Shut the current set-up's meter provider down, as the SDK's ``shutdown`` does."""
        current = self.current
        if current is not None:
            current.shutdown(timeout_millis)

    def __getattr__(self, name: str) -> Any:
        current = self.current
        if current is None or name.startswith("__"):
            raise AttributeError(name)
        return getattr(current, name)

    def __repr__(self) -> str:
        return f"<nemo.lens global MeterProvider -> {self.current!r}>"


GLOBAL_TRACER_PROVIDER = GlobalTracerProvider()
"""What nemo.lens installs as OpenTelemetry's global tracer provider."""
GLOBAL_METER_PROVIDER = GlobalMeterProvider()
"""What nemo.lens installs as OpenTelemetry's global meter provider."""
