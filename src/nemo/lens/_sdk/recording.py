"""Spans recorded on the emitting thread and built for export on the export thread.

A span of the OpenTelemetry SDK does on the thread that starts and ends it all
the work its exporter will need: a lock per span, a ``SpanContext``, attribute
containers that validate on every write, a read-only copy at the end, a
processor call per processor. For a training job that emits thousands of
per-layer and per-microbatch spans per iteration that is the cost of
instrumentation. NVTX and Perfetto's track events record on the hot thread and
defer everything else; this module does the same for the spans nemo.lens's own
primitives make.

:class:`RecordingSpan`
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
    named by ``OTEL_TRACES_SAMPLER``) is consulted as the SDK would.
:class:`LensTracerProvider`
    nemo.lens's tracer provider: an SDK ``TracerProvider`` whose tracers are the
    SDK's for everybody else (the handle's tracer, other instrumentation) and
    which hands a :class:`RecordingTracer` to nemo.lens's primitives
    (:meth:`~LensTracerProvider.primitives_tracer`).

When the recording path applies
    Only while the provider's processors are the ones set-up attached: the
    open-span tracker and one exporter's processor (or none, on a rank that
    exports nothing). A span processor added later
    (``handle.tracer_provider.add_span_processor(...)``), or SDK-internal span
    metrics (``OTEL_PYTHON_SDK_INTERNAL_METRICS_ENABLED``), switch the
    primitives back to the SDK's spans, as do a tracer passed to a primitive
    and a provider of the application's own.

On the export thread a recorded span is written as a JSON line straight from
its fields by the ``file`` and ``console`` exporters
(:func:`~nemo.lens._sdk.exporters.encoding.encode_for_export`), and becomes an
SDK ``ReadableSpan`` (:meth:`RecordingSpan.readable`, identical to the one the
SDK would have made) for every other exporter: OTLP, or one passed to set-up.
"""

from __future__ import annotations

import logging
import os
import traceback
from collections.abc import Callable, Mapping, Sequence
from contextvars import Token
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
from nemo.lens._core.current import SPAN_KEY, attach_span, current_context, detach
from nemo.lens._core.redaction import DEFAULT_REDACT_KEYS, is_redact_key
from nemo.lens._core.sanitize import is_clean_text
from nemo.lens._core.spans import end_span, span_attributes, start_span
from nemo.lens._core.state import SCOPE_VERSION
from nemo.lens._sdk.exporters.encoding import (
    attributes_json,
    encode_json,
    encode_text,
    int_json,
    plain_attributes_json,
    tail_json,
)
from nemo.lens._sdk.exporters.redaction import clean_attributes, clean_resource
from nemo.lens.sampling import RankAwareSampler

if TYPE_CHECKING:
    from opentelemetry.util._decorator import _AgnosticContextManager

    from nemo.lens._sdk.processors import OpenSpanTracker

__all__ = ["LensTracerProvider", "RecordingSpan", "RecordingTracer", "internal_metrics_enabled"]

# The SDK logs these warnings on its own loggers; a recorded span logs them on the same.
_span_logger = logging.getLogger("opentelemetry.sdk.trace")
_attributes_logger = logging.getLogger("opentelemetry.attributes")

_UNSET_STATUS: Final = Status(StatusCode.UNSET)
_REDACTED: Final = "[REDACTED]"
_UNSET_STATUS_JSON: Final = '{"code":"UNSET","description":null}'
_INTERNAL: Final = SpanKind.INTERNAL
# TraceFlags by (random trace id << 1 | sampled): shared, never built per span.
_FLAGS: Final = tuple(TraceFlags(value) for value in range(4))
_SAMPLED: Final = TraceFlags.SAMPLED
_RANDOM_TRACE_ID: Final = TraceFlags.RANDOM_TRACE_ID

# What RecordingSpan._on_exit holds: what a `with span:` block does with an exception.
_RECORD_EXCEPTION: Final = 1
_SET_STATUS: Final = 2

# How a RecordingTracer samples.
_PARENT_BASED_ON: Final = 0  # the SDK's default: the parent's decision, else sampled
_ALWAYS_ON: Final = 1
_FIXED: Final = 2  # RankAwareSampler: one decision for every span of the rank
_CONSULT: Final = 3  # any other sampler: asked, as the SDK asks it

_random_span_id = _ids.random_span_id
_random_trace_id = _ids.random_trace_id
# One C call per id on the hot path; 0 (the invalid id) is drawn again by the functions.
_bits = _ids.draw_bits


def internal_metrics_enabled() -> bool:
    """Whether the SDK is asked to count its own spans (then only its spans will do)."""
    return os.environ.get(OTEL_PYTHON_SDK_INTERNAL_METRICS_ENABLED, "").strip().lower() == "true"


def _is_valid_link(context: SpanContext | None, attributes: types.Attributes) -> bool:
    # The SDK's rule for keeping a link (a private function of the SDK).
    return bool(context and (context.is_valid or (attributes or context.trace_state)))


def _cleaned(
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
    """A span recorded by :class:`RecordingTracer` (see the module docstring).

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
    _trace_id: int
    _trace_state: TraceState | None
    _tracer: RecordingTracer

    _context: SpanContext | None = None
    _dropped_attributes: int = 0
    _events: BoundedList[Event] | None = None
    _links: BoundedList[Link] | None = None
    _on_exit: int = _RECORD_EXCEPTION | _SET_STATUS
    _status: Status = _UNSET_STATUS

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
        if type(value) not in tracer._as_is or type(key) is not str or not key:
            if tracer._max_attributes == 0:
                self._dropped_attributes += 1
                return
            # Through the SDK's container: its key check, value cleaning and warnings.
            bounded = BoundedAttributes(None, None, False, tracer._max_length)
            bounded[key] = value
            if bounded.dropped:
                self._dropped_attributes += bounded.dropped
            for key, value in bounded.copy().items():
                self._store(key, value)
            return
        self._store(key, value)

    def _store(self, key: str, value: Any) -> None:
        attributes = self._attributes
        if attributes is None:
            attributes = self._attributes = {}
        if key in attributes:
            # The SDK deletes first: a key set again moves to the end.
            del attributes[key]
        elif (limit := self._tracer._max_attributes) is not None and len(attributes) >= limit:
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
        if tracer._max_attributes == 0:
            self._dropped_attributes += len(attributes)
            return
        as_is = tracer._as_is
        for key, value in attributes.items():
            if type(value) not in as_is or type(key) is not str or not key:
                cleaned, dropped = _cleaned(attributes, None, tracer._max_length)
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
        bounded = BoundedAttributes(
            tracer._max_event_attributes,
            attributes,
            max_value_len=tracer._max_attribute_length,
            immutable=True,
        )
        event = Event(name=name, attributes=bounded, timestamp=timestamp)
        if not _check_not_ended(self, "_add_event"):
            return
        events = self._events
        if events is None:
            events = self._events = BoundedList(tracer._max_events)
        events.append(event)

    def add_link(self, context: SpanContext, attributes: types.Attributes = None) -> None:
        """Add a link to *context* (kept only if the SDK would keep it)."""
        if not _is_valid_link(context, attributes):
            return
        tracer = self._tracer
        bounded = BoundedAttributes(
            tracer._max_link_attributes,
            attributes,
            max_value_len=tracer._max_attribute_length,
            immutable=True,
        )
        link = Link(context=context, attributes=bounded)
        if not _check_not_ended(self, "_add_link"):
            return
        links = self._links
        if links is None:
            links = self._links = BoundedList(tracer._max_links)
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
        tracker = tracer._tracker
        # The tracker's dict decides who ends an open span: the thread that takes
        # it out. A second thread ending it at the same moment (shutdown ending
        # what is still open) finds it gone and exports nothing twice; a forked
        # child, whose tracker forgot its parent's spans, exports none of them.
        if tracker is not None and tracker.open.pop(self, None) is None:
            return
        if self._flags & _SAMPLED:
            sink = tracer._sink
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
            if self._on_exit & _RECORD_EXCEPTION:
                self.record_exception(exception=exc_val, escaped=True)
            if self._on_exit & _SET_STATUS:
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
        return MappingProxyType(self._attributes or {})

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

    def json_line(self) -> str | None:
        """The finished span as the line ``encode_span`` writes for its :meth:`readable` form.

        Written straight from the recorded fields. ``None`` when a name, key or
        value would first have to be redacted or made exportable
        (:func:`~nemo.lens._sdk.exporters.redaction.clean_span` would change
        the span): the exporter then takes that general path.
        """
        tracer = self._tracer
        tail = tracer._json_tail
        if tail is None:
            tail = tracer.json_tail()
        if not tail:
            return None  # the resource or scope needs cleaning
        name = self._name
        if type(name) is not str or not (name.isascii() or is_clean_text(name)):
            return None
        attributes = self._attributes
        if not attributes:
            attributes_text = "{}"
        else:
            attributes_text = plain_attributes_json(attributes)  # type: ignore[assignment]
            if attributes_text is None:
                if clean_attributes(attributes, {}) is not None:
                    return None
                attributes_text = attributes_json(attributes)
        status = self._status
        if status is _UNSET_STATUS:
            status_text = _UNSET_STATUS_JSON
        else:
            description = status.description
            if description is None:
                description_text = "null"
            elif is_clean_text(description):
                description_text = encode_json(description)
            else:
                return None
            status_text = f'{{"code":"{status.status_code.name}","description":{description_text}}}'
        events_text = "" if not self._events else self._events_json()
        if events_text is None:
            return None
        links_text = "" if not self._links else self._links_json()
        if links_text is None:
            return None
        parent = self._parent
        if parent is None:
            parent_text = "null"
        elif type(parent) is RecordingSpan:
            parent_text = f'"{parent._span_id:016x}"'
        else:
            parent_text = f'"{parent.span_id:016x}"'  # type: ignore[union-attr]
        kind = self._kind
        start, end = self._start_time, self._end_time
        return (
            f'{{"name":{encode_text(name)},'
            f'"trace_id":"{self._trace_id:032x}","span_id":"{self._span_id:016x}",'
            f'"parent_span_id":{parent_text},'
            f'"kind":"{"INTERNAL" if kind is _INTERNAL else kind.name}",'
            f'"start_time_unix_nano":{start if type(start) is int else int_json(start)},'
            f'"end_time_unix_nano":{end if type(end) is int else int_json(end)},'
            f'"status":{status_text},"attributes":{attributes_text},'
            f'"events":[{events_text}],"links":[{links_text}],{tail}'
        )

    def _events_json(self) -> str | None:
        parts = []
        for event in self._events or ():
            name = event.name
            attributes = event.attributes
            if (
                type(name) is not str
                or not (name.isascii() or is_clean_text(name))
                or (attributes and clean_attributes(attributes, {}) is not None)
            ):
                return None
            parts.append(
                f'{{"name":{encode_json(name)},'
                f'"time_unix_nano":{int_json(event.timestamp)},'
                f'"attributes":{attributes_json(attributes)}}}'
            )
        return ",".join(parts)

    def _links_json(self) -> str | None:
        parts = []
        for link in self._links or ():
            attributes = link.attributes
            if attributes and clean_attributes(attributes, {}) is not None:
                return None
            context = link.context
            parts.append(
                f'{{"trace_id":"{context.trace_id:032x}",'
                f'"span_id":"{context.span_id:016x}",'
                f'"attributes":{attributes_json(attributes)}}}'
            )
        return ",".join(parts)

    def readable(self) -> ReadableSpan:
        """The finished span as the SDK would have handed it to its exporters."""
        tracer = self._tracer
        attributes = BoundedAttributes(
            tracer._max_attributes, self._attributes, immutable=True, max_value_len=None
        )
        attributes.dropped += self._dropped_attributes
        events = self._events if self._events is not None else BoundedList(tracer._max_events)
        links = self._links if self._links is not None else BoundedList(tracer._max_links)
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


_new_span = RecordingSpan.__new__


class RecordingTracer(trace_api.Tracer):
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
        self._json_tail: str | None = None
        self._sdk = sdk_tracer
        self.resource = resource
        self.instrumentation_scope = scope
        self.instrumentation_info = instrumentation_info
        self._tracker = tracker
        self._sink = sink
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
        self._max_attributes: int | None = limits.max_span_attributes
        self._max_length: int | None = limits.max_span_attribute_length
        self._max_events: int | None = limits.max_events
        self._max_links: int | None = limits.max_links
        self._max_event_attributes: int | None = limits.max_event_attributes
        self._max_link_attributes: int | None = limits.max_link_attributes
        self._max_attribute_length: int | None = limits.max_attribute_length
        # Values the SDK stores as they are given: its cleaning returns them
        # unchanged (str too, unless strings are cut to a length).
        as_is: set[type] = {bool, int, float, bytes, type(None)}
        if self._max_length is None:
            as_is.add(str)
        if self._max_attributes == 0:
            as_is.clear()
        self._as_is: frozenset[type] = frozenset(as_is)
        # Attributes a span may start with and keep as given (more: the SDK's container).
        self._room = self._max_attributes if self._max_attributes is not None else 1 << 62
        # A primitive's attributes plus its group's two tags still within the limit.
        self._tag_room = self._room - 2
        # Whether enter_scope may store the primitives' cleaned attributes as they are:
        # recording, no sampler to show them to, and no limit that would change them.
        self._owns_attributes = (
            self._sampling != _CONSULT and str in as_is and self._max_attributes != 0
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

    def json_tail(self) -> str | None:
        """The end of the JSON line of every span of this tracer (resource and scope),
        or ``None`` when either would need cleaning first. Made once, on the export thread."""
        tail = self._json_tail
        if tail is None:
            resource, scope = self.resource, self.instrumentation_scope
            exportable = (
                clean_resource(resource)[0] is resource
                and scope.name.isascii()
                and (scope.version is None or scope.version.isascii())
            )
            tail = self._json_tail = tail_json(resource, scope) if exportable else ""
        return tail or None

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
            (_RECORD_EXCEPTION if record_exception else 0)
            | (_SET_STATUS if set_status_on_exception else 0),
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

        span: RecordingSpan = _new_span(RecordingSpan)
        span._name = name
        span._trace_id = trace_id
        span._span_id = span_id
        span._flags = flags
        span._trace_state = trace_state
        span._parent = parent
        span._kind = kind
        span._end_time = None
        span._tracer = self
        if links:
            span._links = self._start_links(links)
        if on_exit != _RECORD_EXCEPTION | _SET_STATUS:
            span._on_exit = on_exit
        if owned or not attributes:
            span._attributes = attributes or None  # type: ignore[assignment]
        else:
            span._attributes = None
            as_is = self._as_is
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
                span._attributes, span._dropped_attributes = _cleaned(
                    attributes, self._max_attributes, self._max_length
                )
        span._start_time = start_time if start_time is not None else time_ns()
        tracker = self._tracker
        if tracker is not None:
            tracker.open[span] = span
        return span

    def enter_scope(
        self,
        name: str,
        kind: SpanKind | None,
        links: Sequence[Link] | None,
        attributes: Mapping[str, object] | None,
        group: str | None,
    ) -> tuple[trace_api.Span, Token[Context]]:
        """Start the span a primitive makes and make it current (see ``state.Recorder``).

        The span is the one ``start_span`` of :mod:`nemo.lens._core.spans` would
        start through this tracer -- attributes cleaned and redacted, then the
        group's tags -- made without the steps between.
        """
        if not self._owns_attributes:
            # Not recording, a sampler to consult, or limits to apply: step by step.
            span = start_span(self, name, kind, links, attributes, group)
            return span, attach_span(span)
        tags = None
        if group is not None:
            tags = _state.tags.get(group)
            if tags is None:
                tags = _state.group_tags(group)
        owned: dict[str, Any] | None
        if attributes:
            owned = {}
            for key, value in attributes.items():
                kind_of = type(value)
                if kind_of is int or kind_of is float or kind_of is bool:
                    owned[key] = value
                elif kind_of is str:
                    owned[key] = _REDACTED if is_redact_key(key, DEFAULT_REDACT_KEYS) else value
                else:
                    # None, a sequence, something to drop: the primitives' own rules.
                    owned = None
                    break
            if owned is None or "" in attributes or len(attributes) > self._tag_room:
                # What the SDK would clean (a list becomes a tuple) or refuse.
                span = self._start(
                    name,
                    None,
                    _INTERNAL if kind is None else kind,
                    span_attributes(attributes, group),
                    False,
                    links,
                    None,
                    _RECORD_EXCEPTION | _SET_STATUS,
                )
                return span, attach_span(span)
            if tags is not None:
                owned.update(tags)
        else:
            owned = dict(tags) if tags is not None else None
        span = self._start(
            name,
            None,
            _INTERNAL if kind is None else kind,
            owned,
            True,
            links,
            None,
            _RECORD_EXCEPTION | _SET_STATUS,
        )
        return span, attach_span(span)

    def exit_scope(
        self,
        span: trace_api.Span,
        token: Token[Context],
        error: BaseException | None,
        record_exception: bool,
    ) -> None:
        """Detach *token* and end *span*, as a span scope does (see ``state.Recorder``)."""
        try:
            detach(token)
        finally:
            if error is None:
                span.end()
            else:
                end_span(span, error, record_exception)

    def _start_links(self, links: Sequence[Link]) -> BoundedList[Link]:
        # As the SDK keeps a span's links: the valid ones, attributes bounded.
        valid = []
        for link in links:
            if link and _is_valid_link(link.context, link.attributes):
                bounded = BoundedAttributes(
                    self._max_link_attributes,
                    link.attributes,
                    max_value_len=self._max_attribute_length,
                    immutable=True,
                )
                valid.append(Link(link.context, bounded))
        return BoundedList.from_seq(self._max_links, valid)

    def start_as_current_span(
        self,
        name: str,
        context: Context | None = None,
        kind: SpanKind = _INTERNAL,
        attributes: types.Attributes = None,
        links: Sequence[Link] | None = (),
        start_time: int | None = None,
        record_exception: bool = True,
        set_status_on_exception: bool = True,
        end_on_exit: bool = True,
    ) -> _AgnosticContextManager[trace_api.Span]:
        """Start a span and make it current for the ``with`` block."""
        if not self._active:
            return self._sdk.start_as_current_span(
                name,
                context,
                kind,
                attributes,
                links,
                start_time,
                record_exception,
                set_status_on_exception,
                end_on_exit,
            )
        span = self.start_span(
            name,
            context,
            kind,
            attributes,
            links,
            start_time,
            record_exception,
            set_status_on_exception,
        )
        return trace_api.use_span(
            span,
            end_on_exit=end_on_exit,
            record_exception=record_exception,
            set_status_on_exception=set_status_on_exception,
        )


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

    def record_to(
        self,
        tracker: OpenSpanTracker | None,
        sink: Callable[[RecordingSpan], None] | None,
    ) -> None:
        """Record the primitives' spans: track them with *tracker*, give the sampled
        ones to *sink* as they end. Set-up calls this once its processors are attached."""
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

    @property
    def records(self) -> bool:
        """Whether the primitives' spans are recorded the light way right now."""
        return self._recording is not None and self._recording.active

    def primitives_tracer(self) -> trace_api.Tracer:
        """The tracer nemo.lens's primitives use with ``tracer=None``."""
        if self._recording is not None:
            return self._recording
        return self.get_tracer(semconv.SCOPE_NAME, SCOPE_VERSION)
