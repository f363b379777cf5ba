"""The light span nemo.lens's primitives record (see :mod:`nemo.lens._sdk.recording`).

:class:`RecordingSpan` holds in ``__slots__`` what every span sets -- name, ids,
flags, parent, kind, times, the attributes in a plain ``dict`` (a primitive's
group tags beside it until first needed) -- and implements
the whole ``Span`` API with the SDK's rules, limits and warnings (a value the SDK
would clean is cleaned through the SDK's own ``BoundedAttributes``). After it
ends it reads like a finished SDK span (``name``, ``attributes``, ``parent``,
``events``, ...), becomes one for an exporter (:meth:`RecordingSpan.readable`)
and has its JSON line written from its fields
(:mod:`nemo.lens._sdk.exporters.recorded_lines`). Its limits, tracker and sink
are its tracer's (:class:`~nemo.lens._sdk.recording.RecordingTracer`), read as
that tracer's public attributes (:class:`SpanOwner`: this module does not import
the tracer's, which imports it). The tracer fills a new span's slots itself:
the two modules are one mechanism, split for size.
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import Callable, Mapping, Sequence
from time import time_ns
from types import MappingProxyType, TracebackType
from typing import TYPE_CHECKING, Any, Final, Protocol

from opentelemetry import trace as trace_api
from opentelemetry.attributes import BoundedAttributes
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.util import BoundedList
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import Link, SpanContext, SpanKind, TraceFlags
from opentelemetry.trace.span import TraceState
from opentelemetry.trace.status import Status, StatusCode
from opentelemetry.util import types

from nemo.lens import semconv

if TYPE_CHECKING:
    from opentelemetry.sdk.util.instrumentation import InstrumentationInfo

    from nemo.lens._sdk.open_spans import OpenSpanTracker

__all__ = [
    "RECORD_EXCEPTION",
    "SET_STATUS",
    "UNSET_STATUS",
    "RecordingSpan",
    "cleaned_attributes",
    "is_valid_link",
]

# The SDK logs these warnings on its own loggers; a recorded span logs them on the same.
_span_logger = logging.getLogger("opentelemetry.sdk.trace")
_attributes_logger = logging.getLogger("opentelemetry.attributes")

UNSET_STATUS: Final = Status(StatusCode.UNSET)
"""The status every span starts with (shared)."""
_SAMPLED: Final = TraceFlags.SAMPLED

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


class SpanOwner(Protocol):
    """What a recorded span reads of its tracer, the recording tracer (which imports
    this module): its limits, where an ended span goes."""

    resource: Resource
    instrumentation_scope: InstrumentationScope
    instrumentation_info: InstrumentationInfo | None
    tracker: OpenSpanTracker | None
    sink: Callable[[RecordingSpan], None] | None
    as_is: frozenset[type]
    max_attributes: int | None
    max_length: int | None
    max_events: int | None
    max_links: int | None
    max_event_attributes: int | None
    max_link_attributes: int | None

    # An event's or link's attributes bounded as the SDK's are.
    def bounded(self, limit: int | None, attributes: types.Attributes) -> BoundedAttributes: ...


class RecordingSpan(trace_api.Span):
    """A span recorded by the recording tracer (see the module docstring).

    To the code that holds it, it is an OpenTelemetry span like the SDK's: the
    same methods, rules, limits and warnings. After it ends it also serves as
    the record the export thread reads.
    """

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
    _tracer: SpanOwner

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
    # (nemo.lens._sdk.exporters.redacting): each must read as the ReadableSpan's does.

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


new_span: Final = RecordingSpan.__new__
"""An empty span whose slots the tracer fills (no ``__init__`` to run)."""
