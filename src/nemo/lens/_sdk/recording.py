"""nemo.lens's tracer provider, and the light spans its primitives record.

:class:`LensTracerProvider` is an SDK ``TracerProvider`` whose tracers are the SDK's for
everybody else and which hands nemo.lens's primitives a :class:`RecordingTracer`: its
:class:`RecordingSpan` costs the emitting thread a fraction of an SDK span and is built for
export on the export thread (docs/architecture.md).
"""

from __future__ import annotations

import logging
import os
import traceback
import weakref
from collections.abc import Callable, Mapping, Sequence
from time import time_ns
from types import MappingProxyType, TracebackType
from typing import TYPE_CHECKING, Any, Final

from opentelemetry import trace as trace_api
from opentelemetry.attributes import BoundedAttributes
from opentelemetry.context import Context
from opentelemetry.sdk.environment_variables import OTEL_PYTHON_SDK_INTERNAL_METRICS_ENABLED
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import (
    Event,
    ReadableSpan,
    SpanLimits,
    SpanProcessor,
    Tracer,
    TracerProvider,
    sampling,
)
from opentelemetry.sdk.trace.id_generator import IdGenerator
from opentelemetry.sdk.trace.sampling import Decision
from opentelemetry.sdk.util import BoundedList
from opentelemetry.sdk.util.instrumentation import InstrumentationInfo, InstrumentationScope
from opentelemetry.trace import Link, NonRecordingSpan, SpanContext, SpanKind, TraceFlags
from opentelemetry.trace.span import TraceState
from opentelemetry.trace.status import Status, StatusCode
from opentelemetry.util import types

from nemo.lens import semconv
from nemo.lens._core import ids as _ids
from nemo.lens._core import state as _state
from nemo.lens._core.redaction import DEFAULT_REDACT_KEYS, is_redact_key
from nemo.lens._core.spans import SPAN_KEY, CurrentSpanTracer, current_context, span_attributes
from nemo.lens.sampling import RankAwareSampler

if TYPE_CHECKING:
    from nemo.lens._sdk.mirroring import Mirror
    from nemo.lens._sdk.open_spans import OpenSpanTracker

__all__ = [
    "RECORD_EXCEPTION",
    "SET_STATUS",
    "UNSET_STATUS",
    "LensTracerProvider",
    "RecordingSpan",
    "RecordingTracer",
    "internal_metrics_enabled",
]

_INTERNAL: Final = SpanKind.INTERNAL
_REDACTED: Final = "[REDACTED]"
# TraceFlags by (random trace id << 1 | sampled): shared, never built per span.
_FLAGS: Final = tuple(TraceFlags(value) for value in range(4))
_SAMPLED: Final = TraceFlags.SAMPLED
_RANDOM_TRACE_ID: Final = TraceFlags.RANDOM_TRACE_ID

# How a RecordingTracer samples.
_PARENT_BASED_ON: Final = 0  # the SDK's default: the parent's decision, else sampled
_ALWAYS_ON: Final = 1
_FIXED: Final = 2  # RankAwareSampler: one decision for every span of the rank
_CONSULT: Final = 3  # any other sampler: asked, as the SDK asks it

_random_span_id = _ids.random_span_id
_random_trace_id = _ids.random_trace_id
# One C call per id; 0 (the invalid id) is drawn again by the functions.
_bits = _ids.draw_bits


# The SDK logs these warnings on its own loggers; a recorded span logs them on the same.
_span_logger = logging.getLogger("opentelemetry.sdk.trace")
_attributes_logger = logging.getLogger("opentelemetry.attributes")

UNSET_STATUS: Final = Status(StatusCode.UNSET)
"""The status every span starts with (shared)."""

# What RecordingSpan._on_exit holds: what a `with span:` block does with an exception.
RECORD_EXCEPTION: Final = 1
SET_STATUS: Final = 2


def is_valid_link(context: SpanContext | None, attributes: types.Attributes) -> bool:
    """The SDK's rule for keeping a link (a private function of the SDK)."""
    return bool(context and (context.is_valid or (attributes or context.trace_state)))


def cleaned_attributes(
    attributes: Mapping[str, Any], limit: int | None, max_length: int | None
) -> tuple[dict[str, Any], int]:
    """*attributes* as the SDK's ``BoundedAttributes`` stores them, and how many it dropped.

    For anything the plain path does not take (a value of another type, a key
    that is not a non-empty ``str``, too many): the SDK's own container does
    the work, with its own warnings.
    """
    bounded = BoundedAttributes(limit, attributes, immutable=False, max_value_len=max_length)
    return dict(bounded.copy()), bounded.dropped


def _check_not_ended(span: RecordingSpan, method: str) -> bool:
    if span._end_time is None:
        return True
    _span_logger.warning("Tried calling %s on an ended span.", method)
    return False


class RecordingSpan(trace_api.Span):
    """A span recorded by :class:`RecordingTracer`: to the code that holds it, an
    OpenTelemetry span like the SDK's (the same methods, rules, limits and warnings); once
    ended, the record the export thread reads, as a finished SDK span reads."""

    # What every span sets, in slots. What few spans set (events, links, a status,
    # dropped attributes, a context made for a child or an exporter) lives in the
    # instance dict the API's Span class gives every span, made only when set: the
    # class attributes below are the defaults. Fewer stores per span, less memory.
    __slots__ = (
        "_attributes",
        "_end_time",
        "_flags",
        "_kind",
        "_name",
        "_parent",
        "_span_id",
        "_start_time",
        "_tags",
        "_trace_id",
        "_trace_state",
        "_tracer",
    )

    _attributes: dict[str, Any] | None
    _end_time: int | None
    _flags: TraceFlags
    _kind: SpanKind
    _name: str
    # A RecordingSpan parent, or the SpanContext of any other (None: a root span).
    _parent: RecordingSpan | SpanContext | None
    _span_id: int
    _start_time: int
    # A group's tags not yet merged into _attributes: a primitive's span keeps them apart
    # (no copy per span) and they are merged in, once, when the attributes are first read
    # or changed (attributes_dict); the JSON lines write them from their shape's pieces.
    _tags: Mapping[str, str] | None
    _trace_id: int
    _trace_state: TraceState | None
    _tracer: RecordingTracer

    _context: SpanContext | None = None
    _dropped_attributes: int = 0
    _events: BoundedList[Event] | None = None
    _links: BoundedList[Link] | None = None
    _on_exit: int = RECORD_EXCEPTION | SET_STATUS
    _status: Status = UNSET_STATUS

    # -- the Span API ---------------------------------------------------------------

    def get_span_context(self) -> SpanContext:
        """This span's context (made on first use)."""
        context = self._context
        if context is None:
            context = self._context = SpanContext(
                self._trace_id, self._span_id, False, self._flags, self._trace_state
            )
        return context

    def is_recording(self) -> bool:
        """Whether the span has not ended yet."""
        return self._end_time is None

    def set_attribute(self, key: str, value: types.AnyValue) -> None:
        """Set one attribute, as the SDK's span does (cleaned, within the limits)."""
        if self._end_time is not None:
            _span_logger.warning("Setting attribute on ended span.")
            return
        tracer = self._tracer
        if type(value) not in tracer.as_is or type(key) is not str or not key:
            if tracer.max_attributes == 0:
                self._dropped_attributes += 1
                return
            # Through the SDK's container: its key check, value cleaning and warnings.
            bounded = BoundedAttributes(None, None, False, tracer.max_length)
            bounded[key] = value
            if bounded.dropped:
                self._dropped_attributes += bounded.dropped
            for key, value in bounded.copy().items():
                self._store(key, value)
            return
        self._store(key, value)

    def attributes_dict(self) -> dict[str, Any] | None:
        """The attributes, as the SDK's span holds them: the group's tags merged in (once)."""
        tags = self._tags
        if tags is not None:
            attributes = self._attributes
            if attributes is None:
                self._attributes = dict(tags)
            else:
                attributes.update(tags)  # as the recorded scope would have, at the start
            self._tags = None
        return self._attributes

    def _store(self, key: str, value: Any) -> None:
        attributes = self.attributes_dict()
        if attributes is None:
            attributes = self._attributes = {}
        if key in attributes:
            # The SDK deletes first: a key set again moves to the end.
            del attributes[key]
        elif (limit := self._tracer.max_attributes) is not None and len(attributes) >= limit:
            _attributes_logger.warning(
                "Attributes dict is full. Dropping the oldest key-value pair from attributes to "
                "make space for the new key-value pair."
            )
            del attributes[next(iter(attributes))]
            self._dropped_attributes += 1
        attributes[key] = value

    def set_attributes(self, attributes: Mapping[str, types.AnyValue]) -> None:
        """Set several attributes, as the SDK's span does."""
        if self._end_time is not None:
            _span_logger.warning("Setting attribute on ended span.")
            return
        tracer = self._tracer
        if tracer.max_attributes == 0:
            self._dropped_attributes += len(attributes)
            return
        as_is = tracer.as_is
        for key, value in attributes.items():
            if type(value) not in as_is or type(key) is not str or not key:
                cleaned, dropped = cleaned_attributes(attributes, None, tracer.max_length)
                if dropped:
                    self._dropped_attributes += dropped
                break
        else:
            cleaned = dict(attributes)
        for key, value in cleaned.items():
            self._store(key, value)

    def add_event(
        self,
        name: str,
        attributes: types.Attributes = None,
        timestamp: int | None = None,
    ) -> None:
        """Add an event (its attributes bounded and cleaned as the SDK's are)."""
        tracer = self._tracer
        bounded = tracer.bounded(tracer.max_event_attributes, attributes)
        event = Event(name=name, attributes=bounded, timestamp=timestamp)
        if not _check_not_ended(self, "_add_event"):
            return
        events = self._events
        if events is None:
            events = self._events = BoundedList(tracer.max_events)
        events.append(event)

    def add_link(self, context: SpanContext, attributes: types.Attributes = None) -> None:
        """Add a link to *context* (kept only if the SDK would keep it)."""
        if not is_valid_link(context, attributes):
            return
        tracer = self._tracer
        bounded = tracer.bounded(tracer.max_link_attributes, attributes)
        link = Link(context=context, attributes=bounded)
        if not _check_not_ended(self, "_add_link"):
            return
        links = self._links
        if links is None:
            links = self._links = BoundedList(tracer.max_links)
        links.append(link)

    def update_name(self, name: str) -> None:
        """Rename the span."""
        if _check_not_ended(self, "update_name"):
            self._name = name

    def set_status(self, status: Status | StatusCode, description: str | None = None) -> None:
        """Set the status; as in the SDK, OK is final and UNSET is ignored."""
        if not _check_not_ended(self, "set_status"):
            return
        current = self._status.status_code
        if isinstance(status, Status):
            if current is StatusCode.OK or status.status_code is StatusCode.UNSET:
                return
            if description is not None:
                _span_logger.warning(
                    "Description %s ignored. Use either `Status` or `(StatusCode, Description)`",
                    description,
                )
            self._status = status
        elif isinstance(status, StatusCode):
            if current is StatusCode.OK or status is StatusCode.UNSET:
                return
            self._status = Status(status, description)

    def record_exception(
        self,
        exception: BaseException,
        attributes: types.Attributes = None,
        timestamp: int | None = None,
        escaped: bool = False,
    ) -> None:
        """Record *exception* as an ``exception`` event, with the SDK's attributes."""
        stacktrace = "".join(traceback.format_exception(exception))
        module = type(exception).__module__
        qualname = type(exception).__qualname__
        exception_type = f"{module}.{qualname}" if module and module != "builtins" else qualname
        recorded: dict[str, types.AnyValue] = {
            semconv.EXCEPTION_TYPE: exception_type,
            semconv.EXCEPTION_MESSAGE: str(exception),
            semconv.EXCEPTION_STACKTRACE: stacktrace,
            semconv.EXCEPTION_ESCAPED: str(escaped),
        }
        if attributes:
            recorded.update(attributes)
        self.add_event(name="exception", attributes=recorded, timestamp=timestamp)

    def end(self, end_time: int | None = None) -> None:
        """End the span and hand it to the exporter's processor (if it is sampled)."""
        now = end_time if end_time is not None else time_ns()
        if self._end_time is not None:
            _span_logger.warning("Calling end() on an ended span.")
            return
        self._end_time = now
        tracer = self._tracer
        tracker = tracer.tracker
        # The tracker's dict decides who ends an open span: the thread that takes
        # it out. A second thread ending it at the same moment (shutdown ending
        # what is still open) finds it gone and exports nothing twice; a forked
        # child, whose tracker forgot its parent's spans, exports none of them.
        if tracker is not None and tracker.open.pop(self, None) is None:
            return
        if self._flags & _SAMPLED:
            sink = tracer.sink
            if sink is not None:
                sink(self)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> None:
        """End the span; an exception is recorded as the SDK's span records it."""
        if exc_val is not None and self.is_recording():
            if self._on_exit & RECORD_EXCEPTION:
                self.record_exception(exception=exc_val, escaped=True)
            if self._on_exit & SET_STATUS:
                self.set_status(
                    Status(
                        status_code=StatusCode.ERROR,
                        description=f"{type(exc_val).__name__}: {exc_val}",
                    )
                )
        super().__exit__(exc_type, exc_val, exc_tb)

    def __repr__(self) -> str:
        return f'{type(self).__name__}(name="{self._name}", context={self.get_span_context()})'

    # -- what a finished SDK span offers to read -------------------------------------
    # OpenTelemetry's OTLP encoder reads a recorded span through these, as it is
    # (through the export guard): each must read as the ReadableSpan's does.

    @property
    def name(self) -> str:
        """The span's name."""
        return self._name

    @property
    def context(self) -> SpanContext:
        """The span's context."""
        return self.get_span_context()

    @property
    def parent(self) -> SpanContext | None:
        """The parent's context (``None`` for a root span)."""
        parent = self._parent
        if type(parent) is RecordingSpan:
            return parent.get_span_context()
        return parent  # type: ignore[return-value]

    @property
    def kind(self) -> SpanKind:
        """The span's kind."""
        return self._kind

    @property
    def start_time(self) -> int:
        """Start, in ns since the epoch."""
        return self._start_time

    @property
    def end_time(self) -> int | None:
        """End, in ns since the epoch (``None`` while open)."""
        return self._end_time

    @property
    def status(self) -> Status:
        """The span's status."""
        return self._status

    @property
    def attributes(self) -> types.Attributes:
        """A read-only view of the attributes."""
        return MappingProxyType(self.attributes_dict() or {})

    @property
    def events(self) -> Sequence[Event]:
        """The events, oldest first."""
        return tuple(self._events) if self._events is not None else ()

    @property
    def links(self) -> Sequence[Link]:
        """The links."""
        return tuple(self._links) if self._links is not None else ()

    @property
    def resource(self) -> Resource:
        """The resource of the provider that made the span."""
        return self._tracer.resource

    @property
    def instrumentation_scope(self) -> InstrumentationScope:
        """The scope of the tracer that made the span."""
        return self._tracer.instrumentation_scope

    @property
    def dropped_attributes(self) -> int:
        """Attributes dropped by the limits or as invalid."""
        return self._dropped_attributes

    @property
    def dropped_events(self) -> int:
        """Events dropped by the limit."""
        return self._events.dropped if self._events is not None else 0

    @property
    def dropped_links(self) -> int:
        """Links dropped by the limit."""
        return self._links.dropped if self._links is not None else 0

    def readable(self) -> ReadableSpan:
        """The finished span as the SDK would have handed it to its exporters."""
        tracer = self._tracer
        attributes = BoundedAttributes(
            tracer.max_attributes, self.attributes_dict(), immutable=True, max_value_len=None
        )
        attributes.dropped += self._dropped_attributes
        events = self._events if self._events is not None else BoundedList(tracer.max_events)
        links = self._links if self._links is not None else BoundedList(tracer.max_links)
        return ReadableSpan(
            name=self._name,
            context=self.get_span_context(),
            parent=self.parent,
            resource=tracer.resource,
            attributes=attributes,
            events=events,
            links=links,
            kind=self._kind,
            status=self._status,
            start_time=self._start_time,
            end_time=self._end_time,
            instrumentation_info=tracer.instrumentation_info,
            instrumentation_scope=tracer.instrumentation_scope,
        )


# An empty span whose slots the tracer fills (no __init__ to run).
new_span: Final = RecordingSpan.__new__


class MirroredSpan(RecordingSpan):
    """A :class:`RecordingSpan` whose profiler ranges (``_ranges``, in the instance dict)
    close as it ends. A recorded span becomes one when set-up asked for profiler mirroring
    (:mod:`nemo.lens._sdk.mirroring`): the same layout, so spans without it pay nothing."""

    __slots__ = ()

    _ranges: tuple[int, Any, Any] | None = None

    def end(self, end_time: int | None = None) -> None:
        """Close the span's profiler ranges (at its first end), then end it."""
        ranges = self._ranges
        if ranges is not None and self._end_time is None:
            self._ranges = None
            self._tracer.mirror.close(ranges)  # type: ignore[union-attr]
        super().end(end_time)


class RecordingTracer(CurrentSpanTracer):
    """Starts :class:`RecordingSpan` s for nemo.lens's primitives.

    While :attr:`active` is false -- the provider got a span processor set-up did not
    attach -- it hands every span to the SDK tracer of the same scope.
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
        mirror: Mirror | None = None,
    ) -> None:
        self._active = True
        self.mirror = mirror
        if mirror is not None:
            # Chosen here, once: without mirroring the class's start runs, unchanged.
            self.start_primitive = self._start_mirrored  # type: ignore[method-assign, assignment]
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
        # Values the SDK stores as they are given (its cleaning returns them unchanged).
        as_is: set[type] = {bool, int, float, bytes, type(None)}
        if self.max_length is None:
            as_is.add(str)
        if self.max_attributes == 0:
            as_is.clear()
        self.as_is: frozenset[type] = frozenset(as_is)
        room = self.max_attributes if self.max_attributes is not None else 1 << 62
        self._room = room
        # A primitive's attributes plus its group's two tags still within the limit.
        self._tag_room = room - 2
        # Whether a primitive's own attributes dict may be kept as the span's, once
        # checked: no sampler shown them first and no limit that would change them.
        self._owns_attributes = (
            self._sampling != _CONSULT and str in as_is and self.max_attributes != 0
        )

    @property
    def active(self) -> bool:
        """Whether spans are recorded the light way (else the SDK tracer makes them)."""
        return self._active

    @active.setter
    def active(self, value: bool) -> None:
        self._active = value

    # -- starting spans ---------------------------------------------------------------

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
        """Start a span as the SDK's tracer would (its rules for attributes), recorded."""
        return self.start_primitive(
            name,
            kind,
            links,
            attributes,
            None,
            False,
            context,
            start_time,
            record_exception,
            set_status_on_exception,
            True,
        )

    def start_primitive(
        self,
        name: str,
        kind: SpanKind | None,
        links: Sequence[Link] | None,
        attributes: Mapping[str, object] | None,
        group: str | None,
        owned: bool = False,
        context: Context | None = None,
        start_time: int | None = None,
        record_exception: bool = True,
        set_status_on_exception: bool = True,
        sdk_rules: bool = False,
    ) -> trace_api.Span:
        """The one start of a recorded span (see ``state.Recorder``).

        *attributes* are cleaned and redacted as the primitives clean them, then *group*'s
        tags follow (with *sdk_rules*, as the SDK's span would store them instead). With
        *owned*, *attributes* is a dict made for this span alone (a primitive's keyword
        arguments): holding only plain values, it is kept as the span's, redacted in place,
        and the group's tags are kept beside it until first read, not copied in.
        """
        kind = _INTERNAL if kind is None else kind
        if not self._active:
            return self._sdk.start_span(
                name,
                context,
                kind,
                attributes if sdk_rules else span_attributes(attributes, group),  # type: ignore[arg-type]
                links,
                start_time,
                record_exception,
                set_status_on_exception,
            )
        tags = None if group is None else _state.tags.get(group) or _state.group_tags(group)
        kept: dict[str, Any] | None = None
        dropped = 0
        if sdk_rules:
            kept, dropped = self._own(attributes)  # type: ignore[arg-type]
        elif (
            owned
            and self._owns_attributes
            and type(attributes) is dict
            and len(attributes) <= self._tag_room
            and "" not in attributes
        ):
            # Plain values only (else None): redact keys' text hidden in place.
            kept = attributes
            for key, value in attributes.items():
                kind_of = type(value)
                if kind_of is int or kind_of is float or kind_of is bool:
                    continue
                if kind_of is not str:
                    kept = None
                    break
                if is_redact_key(key, DEFAULT_REDACT_KEYS):
                    attributes[key] = _REDACTED  # a value replaced: the dict keeps its size
        if kept is None and (attributes or (tags and not self._owns_attributes)):
            # What the SDK would change (a list becomes a tuple), drop or show a sampler.
            kept, dropped = self._own(span_attributes(attributes, group))
            tags = None

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
            result = self._sampler.should_sample(context, trace_id, name, kind, kept, links or ())
            decision = result.decision
            sampled = decision is Decision.RECORD_AND_SAMPLE
            recording = sampled or decision is Decision.RECORD_ONLY
            kept, dropped = self._own(result.attributes)
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
        span._attributes = kept
        span._tags = tags
        if dropped:
            span._dropped_attributes = dropped
        if links:
            span._links = self._start_links(links)
        if not (record_exception and set_status_on_exception):
            span._on_exit = (RECORD_EXCEPTION if record_exception else 0) | (
                SET_STATUS if set_status_on_exception else 0
            )
        span._start_time = start_time if start_time is not None else time_ns()
        tracker = self.tracker
        if tracker is not None:
            tracker.open[span] = span
        return span

    def _start_mirrored(
        self,
        name: str,
        kind: SpanKind | None,
        links: Any,
        attributes: Any,
        group: str | None,
        *more: Any,
    ) -> trace_api.Span:
        """:meth:`start_primitive` (the same arguments), and the span's profiler ranges
        opened (set-up's choice)."""
        span = RecordingTracer.start_primitive(self, name, kind, links, attributes, group, *more)
        if type(span) is RecordingSpan:
            span.__class__ = MirroredSpan  # the same slots: a class change, no copy
            span._ranges = self.mirror.open(name, group)  # type: ignore[attr-defined, union-attr]
        return span

    def _own(self, attributes: types.Attributes) -> tuple[dict[str, Any] | None, int]:
        """*attributes* as the SDK's span would store them, in a dict of the span's own,
        and how many the SDK's rules dropped."""
        if not attributes:
            return None, 0
        as_is = self.as_is
        if len(attributes) <= self._room:
            for key, value in attributes.items():
                if type(value) not in as_is or type(key) is not str or not key:
                    break
            else:
                # dict.copy is the fast copy, of a dict subclass (a group's tags) too.
                if isinstance(attributes, dict):
                    return dict.copy(attributes), 0
                if type(attributes) is MappingProxyType:
                    return attributes.copy(), 0
                return dict(attributes), 0
        return cleaned_attributes(attributes, self.max_attributes, self.max_length)

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


# Processors added to a provider after its set-up was shut down, for the next set-up.
_waiting: list[SpanProcessor] = []


class LensTracerProvider(TracerProvider):
    """nemo.lens's tracer provider: SDK tracers, plus a recording tracer for the primitives.

    Set-up attaches its processors, then calls :meth:`record_to`. A span processor added
    after that (by the application) turns recording off for good: from then on the
    primitives make SDK spans, which every processor sees. One added after shutdown
    joins the current set-up's provider, or the next one's.
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
        self._handed_out: weakref.WeakSet[trace_api.Tracer] = weakref.WeakSet()

    def get_tracer(
        self,
        instrumenting_module_name: str,
        instrumenting_library_version: str | None = None,
        schema_url: str | None = None,
        attributes: types.Attributes = None,
    ) -> trace_api.Tracer:
        """The SDK's tracer for this scope (one that makes no-op spans after shutdown)."""
        tracer = super().get_tracer(
            instrumenting_module_name, instrumenting_library_version, schema_url, attributes
        )
        if self._shut_down:
            return trace_api.NoOpTracer()
        self._handed_out.add(tracer)
        return tracer

    def record_to(
        self,
        tracker: OpenSpanTracker | None,
        sink: Callable[[RecordingSpan], None] | None,
        mirror: Mirror | None = None,
    ) -> None:
        """Record the primitives' spans: track them with *tracker*, give the sampled ones
        to *sink* as they end, open their profiler ranges with *mirror*. Set-up calls this
        once its processors are attached."""
        self._tracker = tracker
        sdk_tracer = self.get_tracer(semconv.SCOPE_NAME, _state.SCOPE_VERSION)
        self._recording = RecordingTracer(
            sdk_tracer,
            sampler=self.sampler,
            resource=self.resource,
            limits=self._limits,
            scope=InstrumentationScope(semconv.SCOPE_NAME, _state.SCOPE_VERSION, None, None),
            instrumentation_info=getattr(sdk_tracer, "instrumentation_info", None),
            tracker=tracker,
            sink=sink,
            mirror=mirror,
        )
        self._routed = True
        waiting = list(_waiting)
        _waiting.clear()
        for processor in waiting:
            self.add_span_processor(processor)
        if internal_metrics_enabled():
            self._recording.active = False

    def add_span_processor(self, span_processor: SpanProcessor) -> None:
        """Add *span_processor*; one added after set-up turns recording off (see the class)."""
        if self._shut_down:
            current = _state.installed_tracer_provider()
            if isinstance(current, LensTracerProvider) and not current._shut_down:
                current.add_span_processor(span_processor)
            else:
                _waiting.append(span_processor)
            return
        super().add_span_processor(span_processor)
        if self._routed and self._recording is not None:
            self._recording.active = False

    def shutdown(self) -> None:
        """Shut the span processors down, once, ending open spans first (marked truncated):
        ``trace.get_tracer_provider().shutdown()`` keeps them, as ``handle.shutdown()`` does."""
        if self._shut_down:
            return
        self._shut_down = True
        if self._tracker is not None:
            self._tracker.close()
        super().shutdown()
        # Tracers taken while it was set up (a library's, cached) start no-op spans now.
        for tracer in list(self._handed_out):
            if isinstance(tracer, Tracer):
                tracer.sampler = sampling.ALWAYS_OFF

    @property
    def records(self) -> bool:
        """Whether the primitives' spans are recorded the light way right now."""
        return self._recording is not None and self._recording.active

    def primitives_tracer(self) -> trace_api.Tracer:
        """The tracer nemo.lens's primitives use with ``tracer=None``."""
        if self._recording is not None:
            return self._recording
        return self.get_tracer(semconv.SCOPE_NAME, _state.SCOPE_VERSION)


def internal_metrics_enabled() -> bool:
    """Whether the SDK is asked to count its own spans (then only its spans will do)."""
    return os.environ.get(OTEL_PYTHON_SDK_INTERNAL_METRICS_ENABLED, "").strip().lower() == "true"
