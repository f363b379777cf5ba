"""nemo.lens's tracer provider: the SDK's, plus a recording tracer for the primitives.

:class:`LensTracerProvider` is an SDK ``TracerProvider`` whose tracers are the
SDK's for everybody else (the handle's tracer, other instrumentation) and which
hands a :class:`~nemo.lens._sdk.recording.RecordingTracer` to nemo.lens's
primitives (:meth:`~LensTracerProvider.primitives_tracer`) while the processors
are the ones set-up attached (see :mod:`nemo.lens._sdk.recording` for when the
recording path applies).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING

from opentelemetry import trace as trace_api
from opentelemetry.sdk.environment_variables import OTEL_PYTHON_SDK_INTERNAL_METRICS_ENABLED
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanLimits, SpanProcessor, TracerProvider, sampling
from opentelemetry.sdk.trace.id_generator import IdGenerator
from opentelemetry.sdk.util.instrumentation import InstrumentationScope

from nemo.lens import semconv
from nemo.lens._core.state import SCOPE_VERSION
from nemo.lens._sdk.recorded_span import RecordingSpan
from nemo.lens._sdk.recording import RecordingTracer

if TYPE_CHECKING:
    from nemo.lens._sdk.open_spans import OpenSpanTracker

__all__ = ["LensTracerProvider", "internal_metrics_enabled"]


class LensTracerProvider(TracerProvider):
    """nemo.lens's tracer provider: SDK tracers, plus a recording tracer for the primitives.

    Set-up attaches its processors, then calls :meth:`record_to` to say where
    recorded spans go. A span processor added after that (by the application)
    turns recording off for good: from then on the primitives make SDK spans,
    which every processor sees.
    """

    def __init__(
        self,
        *,
        sampler: sampling.Sampler | None,
        resource: Resource,
        id_generator: IdGenerator,
    ) -> None:
        self._limits = SpanLimits()
        super().__init__(
            sampler=sampler,
            resource=resource,
            shutdown_on_exit=False,
            id_generator=id_generator,
            span_limits=self._limits,
        )
        self._recording: RecordingTracer | None = None
        self._routed = False
        self._tracker: OpenSpanTracker | None = None
        self._shut_down = False

    def record_to(
        self,
        tracker: OpenSpanTracker | None,
        sink: Callable[[RecordingSpan], None] | None,
    ) -> None:
        """Record the primitives' spans: track them with *tracker*, give the sampled
        ones to *sink* as they end. Set-up calls this once its processors are attached."""
        self._tracker = tracker
        sdk_tracer = self.get_tracer(semconv.SCOPE_NAME, SCOPE_VERSION)
        self._recording = RecordingTracer(
            sdk_tracer,
            sampler=self.sampler,
            resource=self.resource,
            limits=self._limits,
            scope=InstrumentationScope(semconv.SCOPE_NAME, SCOPE_VERSION, None, None),
            instrumentation_info=getattr(sdk_tracer, "instrumentation_info", None),
            tracker=tracker,
            sink=sink,
        )
        self._routed = True
        if internal_metrics_enabled():
            self._recording.active = False

    def add_span_processor(self, span_processor: SpanProcessor) -> None:
        """Add *span_processor*; one added after set-up turns recording off (see the class)."""
        super().add_span_processor(span_processor)
        if self._routed and self._recording is not None:
            self._recording.active = False

    def shutdown(self) -> None:
        """Shut the span processors down, as the SDK's provider does, once.

        Spans still open are ended first, marked truncated, so that they reach the
        processors (what v0.2.0's provider did too): a call of
        ``trace.get_tracer_provider().shutdown()`` keeps them, as ``handle.shutdown()``
        does.
        """
        if self._shut_down:
            return
        self._shut_down = True
        if self._tracker is not None:
            self._tracker.close()
        super().shutdown()

    @property
    def records(self) -> bool:
        """Whether the primitives' spans are recorded the light way right now."""
        return self._recording is not None and self._recording.active

    def primitives_tracer(self) -> trace_api.Tracer:
        """The tracer nemo.lens's primitives use with ``tracer=None``."""
        if self._recording is not None:
            return self._recording
        return self.get_tracer(semconv.SCOPE_NAME, SCOPE_VERSION)


def internal_metrics_enabled() -> bool:
    """Whether the SDK is asked to count its own spans (then only its spans will do)."""
    return os.environ.get(OTEL_PYTHON_SDK_INTERNAL_METRICS_ENABLED, "").strip().lower() == "true"
