"""The primitives' span scopes, recorded: what ``state.Recorder`` asks of the recording tracer.

A primitive (``managed_span``, ``span_cm``, a ``trace_fn`` call) with
``tracer=None`` hands its whole ``with`` block to the recorder of the installed
provider: :meth:`ScopeRecording.scope` returns a :class:`RecordedScope`, which
starts the span and makes it current on entry, and detaches and ends it on
exit. The span is the one the primitives would start step by step through the
recording tracer (:mod:`nemo.lens._sdk.recording`), of which
:class:`ScopeRecording` is a part (a base class), kept apart for size. The
common case -- a root or the child of a sampled recorded span, with plain
attributes -- is made here without a call.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from time import time_ns
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final

from opentelemetry import context as _context_api
from opentelemetry import trace as trace_api
from opentelemetry.context import Context
from opentelemetry.trace import Link, SpanKind, TraceFlags
from opentelemetry.util import types

from nemo.lens._core import ids as _ids
from nemo.lens._core import state as _state
from nemo.lens._core.current import (
    CONTEXT_VARIABLE,
    DEFAULT_RUNTIME,
    SPAN_KEY,
    CurrentSpanTracer,
    attach_span,
    detach,
)
from nemo.lens._core.redaction import is_redact_key
from nemo.lens._core.spans import SpanScope, end_span, span_attributes, start_span
from nemo.lens._sdk.recorded_span import RECORD_EXCEPTION, SET_STATUS, RecordingSpan, new_span
from nemo.lens.fallbacks import DEFAULT_REDACT_KEYS

if TYPE_CHECKING:
    from nemo.lens._sdk.open_spans import OpenSpanTracker

__all__ = ["ScopeRecording"]

_REDACTED: Final = "[REDACTED]"
_INTERNAL: Final = SpanKind.INTERNAL
_SAMPLED: Final = TraceFlags.SAMPLED
_ROOT_FLAGS: Final = TraceFlags(TraceFlags.RANDOM_TRACE_ID | TraceFlags.SAMPLED)
_BOTH: Final = RECORD_EXCEPTION | SET_STATUS

_random_span_id = _ids.random_span_id
_random_trace_id = _ids.random_trace_id
# One C call per id on the hot path; 0 (the invalid id) is drawn again by the functions.
_bits = _ids.draw_bits
# A Context refuses item assignment; a new one is filled before anyone sees it.
_set_item = dict.__setitem__
_GET_TRACER: Final = _state.GET_TRACER


class ScopeRecording(CurrentSpanTracer):
    """The recording tracer's side that serves span scopes (see the module docstring)."""

    # Set by the recording tracer (nemo.lens._sdk.recording.RecordingTracer).
    tracker: OpenSpanTracker | None
    sink: Callable[[RecordingSpan], None] | None
    _owns_attributes: bool
    _samples_all: bool
    _tag_room: int

    # RecordingTracer._start(name, context, kind, attributes, owned, links, start_time, on_exit).
    _start: Callable[
        [
            str,
            Context | None,
            SpanKind,
            types.Attributes,
            bool,
            Sequence[Link] | None,
            int | None,
            int,
        ],
        trace_api.Span,
    ]

    def scope(
        self,
        name: str,
        kind: SpanKind | None,
        links: Sequence[Link] | None,
        attributes: Mapping[str, object] | None,
        record_exception: bool,
        group: str | None,
    ) -> SpanScope:
        """The ``with`` block of a primitive's span (see ``state.Recorder``)."""
        if trace_api.get_tracer is not _GET_TRACER:
            # A test replaced opentelemetry.trace.get_tracer: its tracer makes the span.
            return SpanScope(
                _state.default_tracer(), name, kind, links, attributes, record_exception, group
            )
        scope = _new_scope(RecordedScope)
        scope._tracer = self
        scope._name = name
        scope._kind = kind
        scope._links = links
        scope._attributes = attributes
        scope._record = record_exception
        scope._group = group
        return scope


class RecordedScope(SpanScope):
    """A primitive's span, start to end: :class:`~nemo.lens._core.spans.SpanScope`'s
    work done the recording tracer's way (see the module docstring).

    The span is the one ``start_span`` of :mod:`nemo.lens._core.spans` would
    start through the tracer -- attributes cleaned and redacted, then the
    group's tags -- made without the steps between; it ends as ``end_span``
    ends it. Single use. Made by :meth:`ScopeRecording.scope` (no ``__init__``),
    with the fields of a ``SpanScope``.
    """

    __slots__ = ()

    _tracer: ScopeRecording
    _span: Any  # the span

    def __enter__(self) -> trace_api.Span:
        tracer = self._tracer
        name = self._name
        kind = self._kind
        links = self._links
        attributes = self._attributes
        group = self._group
        if _state.recorder is not tracer:
            # Set-up changed between the primitive's call and its block: the generic way.
            scope = self._delegate = SpanScope(
                None, name, kind, links, attributes, self._record, group
            )
            self._span = None  # (so __exit__ knows)
            return scope.__enter__()
        if not tracer._owns_attributes:
            # Not recording, a sampler to consult, or limits to apply: step by step.
            span = start_span(tracer, name, kind, links, attributes, group)
            self._span = span
            self._token = attach_span(span)
            return span
        tags = None
        if group is not None:
            tags = _state.tags.get(group)
            if tags is None:
                tags = _state.group_tags(group)
        owned: dict[str, Any] | None
        if attributes:
            # The primitives' keyword arguments: a dict made for this span alone, kept.
            owned = attributes if type(attributes) is dict else dict(attributes)
            for key, value in owned.items():
                kind_of = type(value)
                if kind_of is int or kind_of is float or kind_of is bool:
                    continue
                if kind_of is str:
                    if is_redact_key(key, DEFAULT_REDACT_KEYS):
                        owned[key] = _REDACTED  # a value replaced: the dict keeps its size
                    continue
                # None, a sequence, something to drop: the primitives' own rules.
                owned = None
                break
            if owned is None or "" in attributes or len(attributes) > tracer._tag_room:
                # What the SDK would clean (a list becomes a tuple) or refuse.
                span = tracer._start(
                    name,
                    None,
                    _INTERNAL if kind is None else kind,
                    span_attributes(attributes, group),
                    False,
                    links,
                    None,
                    _BOTH,
                )
                self._span = span
                self._token = attach_span(span)
                return span
        else:
            owned = None
        variable = CONTEXT_VARIABLE
        if variable is not None and _context_api._RUNTIME_CONTEXT is DEFAULT_RUNTIME:
            context = variable.get()
            parent: Any = context.get(SPAN_KEY)
            common = (
                not links
                and tracer._samples_all
                and (parent is None or (type(parent) is RecordingSpan and parent._flags & _SAMPLED))
            )
        else:
            common = False
        if not common:
            # Another runtime context, links, a sampler to ask, a parent not recorded here.
            if tags is not None:
                if owned is None:
                    owned = dict(tags)
                else:
                    owned.update(tags)
            span = tracer._start(name, None, _INTERNAL if kind is None else kind, owned, True,
                               links, None, _BOTH)  # fmt: skip
            self._span = span
            self._token = attach_span(span)
            return span
        # The common case, as _start makes it: a root, or the child of a sampled span
        # recorded here, with a sampler that samples both. Fewer steps, no call.
        span = new_span(RecordingSpan)
        if parent is None:
            span._trace_id = _bits(128) or _random_trace_id()
            span._flags = _ROOT_FLAGS
            span._trace_state = None
        else:
            span._trace_id = parent._trace_id
            span._flags = parent._flags
            span._trace_state = parent._trace_state
        span._span_id = _bits(64) or _random_span_id()
        span._name = name
        span._parent = parent
        span._kind = _INTERNAL if kind is None else kind
        span._end_time = None
        span._tracer = tracer  # type: ignore[assignment]  # (the recording tracer: its one subclass)
        span._attributes = owned
        span._tags = tags  # merged into the attributes when first read (RecordingSpan)
        span._start_time = time_ns()
        tracker = tracer.tracker
        if tracker is not None:
            tracker.open[span] = span
        # attach_span, inline.
        context = Context(context)
        _set_item(context, SPAN_KEY, span)
        self._span = span
        self._token = variable.set(context)  # type: ignore[union-attr]  # (common: it is set)
        return span

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        span = self._span
        if span is None:  # the generic way began the block (its delegate): it ends it
            return SpanScope.__exit__(self, exc_type, error, tb)
        token, tracer = self._token, self._tracer
        try:
            variable = CONTEXT_VARIABLE
            if variable is None or _context_api._RUNTIME_CONTEXT is not DEFAULT_RUNTIME:
                detach(token)
            else:
                try:
                    variable.reset(token)  # detach, inline
                except Exception:
                    detach(token)  # fails the same way, and logs it as detach does
        finally:
            if error is not None:
                end_span(span, error, self._record)
            elif type(span) is not RecordingSpan or span._end_time is not None:
                span.end()
            else:
                # RecordingSpan.end, without the call (see there).
                span._end_time = time_ns()
                tracker = tracer.tracker
                if (tracker is None or tracker.open.pop(span, None) is not None) and (
                    span._flags & _SAMPLED and (sink := tracer.sink) is not None
                ):
                    sink(span)


_new_scope = RecordedScope.__new__
