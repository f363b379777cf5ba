"""Spans recorded on the emitting thread and built for export on the export thread.

A span of the OpenTelemetry SDK does on the thread that starts and ends it all
the work its exporter will need: a lock per span, a ``SpanContext``, attribute
containers that validate on every write, a read-only copy at the end, a
processor call per processor. For a training job that emits thousands of
per-layer and per-microbatch spans per iteration that is the cost of
instrumentation. NVTX and Perfetto's track events record on the hot thread and
defer everything else; this module does the same for the spans nemo.lens's own
primitives make.

:class:`~nemo.lens._sdk.recorded_span.RecordingSpan`
    A light span (``__slots__``): name, ids, flags, parent, kind, times and the
    attributes in a plain ``dict``. It implements the whole ``Span`` API --
    attributes, events, links, status, ``record_exception``,
    ``get_span_context``, ``is_recording``, ``update_name`` -- with the SDK's
    rules, limits and warnings (a value the SDK would clean is cleaned through
    the SDK's own ``BoundedAttributes``), and reads like a finished SDK span
    (``name``, ``attributes``, ``parent``, ``events``, ...). Its
    ``SpanContext`` is made when first asked for. Ending it appends it to the
    batch processor's queue (a ``deque``; see
    :meth:`~nemo.lens._sdk.batching.BatchingSpanProcessor.queue_span`).
:class:`RecordingTracer`
    Starts them: ids from :mod:`nemo.lens._core.ids`, the parent read straight
    from the current context, and the samplers nemo.lens installs decided
    without a call (``ParentBased(ALWAYS_ON)``, the SDK's default, and
    :class:`~nemo.lens.sampling.RankAwareSampler`); any other sampler (one
    named by ``OTEL_TRACES_SAMPLER``) is consulted as the SDK would. The
    primitives' ``with`` blocks it serves whole, through its base class
    :class:`~nemo.lens._sdk.scopes.ScopeRecording`.
:class:`~nemo.lens._sdk.provider.LensTracerProvider`
    nemo.lens's tracer provider: an SDK ``TracerProvider`` whose tracers are the
    SDK's for everybody else (the handle's tracer, other instrumentation) and
    which hands a :class:`RecordingTracer` to nemo.lens's primitives
    (:meth:`~nemo.lens._sdk.provider.LensTracerProvider.primitives_tracer`).

When the recording path applies
    Only while the provider's processors are the ones set-up attached: the
    open-span tracker and one exporter's processor (or none, on a rank that
    exports nothing). A span processor added later
    (``handle.tracer_provider.add_span_processor(...)``), or SDK-internal span
    metrics (``OTEL_PYTHON_SDK_INTERNAL_METRICS_ENABLED``), switch the
    primitives back to the SDK's spans, as do a tracer passed to a primitive
    and a provider of the application's own.

On the export thread a recorded span is written as a JSON line straight from
its fields by the ``file`` exporter (and the ``console`` with
``console_format="lens"``;
:func:`~nemo.lens._sdk.exporters.encoding.encode_for_export`), and becomes an
SDK ``ReadableSpan``
(:meth:`~nemo.lens._sdk.recorded_span.RecordingSpan.readable`, identical to the
one the SDK would have made) for every other exporter: the default console
(which prints its ``to_json``), or one passed to set-up. OTLP's encoder reads
it as it is.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from time import time_ns
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final

from opentelemetry import trace as trace_api
from opentelemetry.attributes import BoundedAttributes
from opentelemetry.context import Context
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanLimits, sampling
from opentelemetry.sdk.trace.sampling import Decision
from opentelemetry.sdk.util import BoundedList
from opentelemetry.sdk.util.instrumentation import InstrumentationInfo, InstrumentationScope
from opentelemetry.trace import Link, NonRecordingSpan, SpanContext, SpanKind, TraceFlags
from opentelemetry.util import types

from nemo.lens._core import ids as _ids
from nemo.lens._core.current import (
    SPAN_KEY,
    current_context,
)
from nemo.lens._sdk.recorded_span import (
    RECORD_EXCEPTION,
    SET_STATUS,
    RecordingSpan,
    cleaned_attributes,
    is_valid_link,
    new_span,
)
from nemo.lens._sdk.scopes import ScopeRecording
from nemo.lens.sampling import RankAwareSampler

if TYPE_CHECKING:
    from nemo.lens._sdk.open_spans import OpenSpanTracker

__all__ = ["RecordingTracer"]

_INTERNAL: Final = SpanKind.INTERNAL
# TraceFlags by (random trace id << 1 | sampled): shared, never built per span.
_FLAGS: Final = tuple(TraceFlags(value) for value in range(4))
_SAMPLED: Final = TraceFlags.SAMPLED
_RANDOM_TRACE_ID: Final = TraceFlags.RANDOM_TRACE_ID
_BOTH: Final = RECORD_EXCEPTION | SET_STATUS

# How a RecordingTracer samples.
_PARENT_BASED_ON: Final = 0  # the SDK's default: the parent's decision, else sampled
_ALWAYS_ON: Final = 1
_FIXED: Final = 2  # RankAwareSampler: one decision for every span of the rank
_CONSULT: Final = 3  # any other sampler: asked, as the SDK asks it

_random_span_id = _ids.random_span_id
_random_trace_id = _ids.random_trace_id
# One C call per id on the hot path; 0 (the invalid id) is drawn again by the functions.
_bits = _ids.draw_bits


class RecordingTracer(ScopeRecording):
    """Starts :class:`RecordingSpan` s for nemo.lens's primitives (see the module docstring).

    While :attr:`active` is false -- the provider got a span processor set-up did
    not attach -- it hands every call to the SDK tracer of the same scope.
    """

    def __init__(
        self,
        sdk_tracer: trace_api.Tracer,
        *,
        sampler: sampling.Sampler,
        resource: Resource,
        limits: SpanLimits,
        scope: InstrumentationScope,
        instrumentation_info: InstrumentationInfo | None,
        tracker: OpenSpanTracker | None,
        sink: Callable[[RecordingSpan], None] | None,
    ) -> None:
        self._active = True
        self._sdk = sdk_tracer
        self.resource = resource
        self.instrumentation_scope = scope
        self.instrumentation_info = instrumentation_info
        self.tracker = tracker
        self.sink = sink
        self._sampler = sampler
        self._fixed_decision = False
        if sampler is sampling.DEFAULT_ON:
            self._sampling = _PARENT_BASED_ON
        elif sampler is sampling.ALWAYS_ON:
            self._sampling = _ALWAYS_ON
        elif type(sampler) is RankAwareSampler:
            self._sampling = _FIXED
            self._fixed_decision = sampler.sampled
        else:
            self._sampling = _CONSULT
        self.max_attributes: int | None = limits.max_span_attributes
        self.max_length: int | None = limits.max_span_attribute_length
        self.max_events: int | None = limits.max_events
        self.max_links: int | None = limits.max_links
        self.max_event_attributes: int | None = limits.max_event_attributes
        self.max_link_attributes: int | None = limits.max_link_attributes
        self.max_attribute_length: int | None = limits.max_attribute_length
        # Values the SDK stores as they are given: its cleaning returns them
        # unchanged (str too, unless strings are cut to a length).
        as_is: set[type] = {bool, int, float, bytes, type(None)}
        if self.max_length is None:
            as_is.add(str)
        if self.max_attributes == 0:
            as_is.clear()
        self.as_is: frozenset[type] = frozenset(as_is)
        # Attributes a span may start with and keep as given (more: the SDK's container).
        self._room = self.max_attributes if self.max_attributes is not None else 1 << 62
        # A primitive's attributes plus its group's two tags still within the limit.
        self._tag_room = self._room - 2
        # Whether a recorded scope may store the primitives' cleaned attributes as they are:
        # recording, no sampler to show them to, and no limit that would change them.
        self._owns_attributes = (
            self._sampling != _CONSULT and str in as_is and self.max_attributes != 0
        )
        # Whether every root span, and every child of a sampled span, is sampled.
        self._samples_all = self._sampling in (_PARENT_BASED_ON, _ALWAYS_ON) or (
            self._sampling == _FIXED and self._fixed_decision
        )

    @property
    def active(self) -> bool:
        """Whether spans are recorded the light way (else the SDK tracer makes them)."""
        return self._active

    @active.setter
    def active(self, value: bool) -> None:
        self._active = value
        if not value:
            self._owns_attributes = False

    def start_span(
        self,
        name: str,
        context: Context | None = None,
        kind: SpanKind = _INTERNAL,
        attributes: types.Attributes = None,
        links: Sequence[Link] | None = (),
        start_time: int | None = None,
        record_exception: bool = True,
        set_status_on_exception: bool = True,
    ) -> trace_api.Span:
        """Start a span as the SDK's tracer would, recording it the light way."""
        if not self._active:
            return self._sdk.start_span(
                name,
                context,
                kind,
                attributes,
                links,
                start_time,
                record_exception,
                set_status_on_exception,
            )
        return self._start(
            name,
            context,
            kind,
            attributes,
            False,
            links,
            start_time,
            (RECORD_EXCEPTION if record_exception else 0)
            | (SET_STATUS if set_status_on_exception else 0),
        )

    def _start(
        self,
        name: str,
        context: Context | None,
        kind: SpanKind,
        attributes: types.Attributes,
        owned: bool,
        links: Sequence[Link] | None,
        start_time: int | None,
        on_exit: int,
    ) -> trace_api.Span:
        # *owned*: *attributes* is a dict of this span's own that the SDK would
        # store unchanged (so it is kept as it is, not checked and copied).
        parent: Any = (context if context is not None else current_context()).get(SPAN_KEY)
        if type(parent) is RecordingSpan:
            trace_id = parent._trace_id
            parent_flags = parent._flags
            trace_state = parent._trace_state
        else:
            parent_context = (
                parent.get_span_context()
                if parent is not None and isinstance(parent, trace_api.Span)
                else None
            )
            if parent_context is not None and not isinstance(parent_context, SpanContext):
                raise TypeError("parent_span_context must be a SpanContext or None.")
            if parent_context is None or not parent_context.is_valid:
                parent = None
                # The ids of _core.ids are random: the W3C random-trace-id flag holds.
                trace_id = _bits(128) or _random_trace_id()
                parent_flags = _FLAGS[_RANDOM_TRACE_ID]
                trace_state = None
            else:
                parent = parent_context
                trace_id = parent_context.trace_id
                parent_flags = parent_context.trace_flags
                trace_state = parent_context.trace_state
        span_id = _bits(64) or _random_span_id()

        sampling_mode = self._sampling
        if sampling_mode == _PARENT_BASED_ON:
            sampled = parent is None or bool(parent_flags & _SAMPLED)
            recording = sampled
        elif sampling_mode == _ALWAYS_ON:
            sampled = recording = True
        elif sampling_mode == _FIXED:
            sampled = recording = self._fixed_decision
        else:
            result = self._sampler.should_sample(
                context, trace_id, name, kind, attributes, links or ()
            )
            decision = result.decision
            sampled = decision is Decision.RECORD_AND_SAMPLE
            recording = sampled or decision is Decision.RECORD_ONLY
            attributes = result.attributes
            owned = False
            trace_state = result.trace_state
        flags = _FLAGS[(parent_flags & _RANDOM_TRACE_ID) | (_SAMPLED if sampled else 0)]
        if not recording:
            return NonRecordingSpan(SpanContext(trace_id, span_id, False, flags, trace_state))

        span: RecordingSpan = new_span(RecordingSpan)
        span._name = name
        span._trace_id = trace_id
        span._span_id = span_id
        span._flags = flags
        span._trace_state = trace_state
        span._parent = parent
        span._kind = kind
        span._end_time = None
        span._tracer = self
        span._tags = None
        if links:
            span._links = self._start_links(links)
        if on_exit != _BOTH:
            span._on_exit = on_exit
        if owned or not attributes:
            span._attributes = attributes or None  # type: ignore[assignment]
        else:
            span._attributes = None
            as_is = self.as_is
            if len(attributes) <= self._room:
                for key, value in attributes.items():
                    if type(value) not in as_is or type(key) is not str or not key:
                        break
                else:
                    # dict.copy is the fast copy, of a dict subclass (a group's tags) too.
                    span._attributes = (
                        dict.copy(attributes)
                        if isinstance(attributes, dict)
                        else attributes.copy()
                        if type(attributes) is MappingProxyType
                        else dict(attributes)
                    )
            if span._attributes is None:
                span._attributes, span._dropped_attributes = cleaned_attributes(
                    attributes, self.max_attributes, self.max_length
                )
        span._start_time = start_time if start_time is not None else time_ns()
        tracker = self.tracker
        if tracker is not None:
            tracker.open[span] = span
        return span

    def bounded(self, limit: int | None, attributes: types.Attributes) -> BoundedAttributes:
        """*attributes* of an event or link, bounded and cleaned as the SDK's are."""
        return BoundedAttributes(
            limit, attributes, max_value_len=self.max_attribute_length, immutable=True
        )

    def _start_links(self, links: Sequence[Link]) -> BoundedList[Link]:
        # As the SDK keeps a span's links: the valid ones, attributes bounded.
        limit = self.max_link_attributes
        valid = [
            Link(link.context, self.bounded(limit, link.attributes))
            for link in links
            if link and is_valid_link(link.context, link.attributes)
        ]
        return BoundedList.from_seq(self.max_links, valid)
