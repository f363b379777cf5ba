"""The open spans of a pipeline (ended by shutdown, marked truncated), and which of them
the ``file`` exporter records open, for a reader of a process that dies."""

from __future__ import annotations

import time
from typing import Any, Final

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor
from opentelemetry.trace import SpanContext

from nemo.lens import semconv
from nemo.lens._core import fork as _fork
from nemo.lens.spec import GOODPUT

__all__ = ["OpenSpanRecorder", "OpenSpanTracker"]


class _Untracked(dict[object, Any]):
    """A closed tracker's ``open``: keeps nothing, and a span ending finds itself "taken
    out", so it goes on as any span ending after shutdown (counted, not exported). The live
    ``open`` is a plain ``dict``: the span path pays nothing for this."""

    __slots__ = ()

    def __setitem__(self, key: object, value: Any) -> None:
        pass

    def pop(self, key: object, default: Any = None) -> Any:
        return key


_UNTRACKED: Final = _Untracked()


class OpenSpanTracker(SpanProcessor):
    """Holds the spans that started and have not ended, so shutdown can end them. Recorded
    spans add and remove themselves (:attr:`open`), and only the thread that takes one out
    exports it. No lock: a SIGTERM handler or a fork must never wait for one."""

    def __init__(self) -> None:
        self.open: dict[object, Any] = {}
        _fork.register(self)

    def _after_fork_in_child(self) -> None:
        # The parent's open spans are the parent's to end (a child ending its copies would
        # export them twice); a closed tracker stays closed.
        if self.open is not _UNTRACKED:
            self.open = {}

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        if span.context is not None:  # keyed by ids: on_end gets a copy
            self.open[(span.context.trace_id, span.context.span_id)] = span

    def on_end(self, span: ReadableSpan) -> None:
        if span.context is not None:
            self.open.pop((span.context.trace_id, span.context.span_id), None)

    @property
    def open_count(self) -> int:
        return len(self.open)

    def close(self) -> int:
        """End every open span, marked truncated (with an event saying why), then track
        nothing more. Returns how many were ended."""
        # A snapshot: a span whose own thread ends it meanwhile is exported once, by
        # whoever takes it out; children first, so none ends after its parent.
        ended = 0
        for span in reversed(list(self.open.values())):
            if span.end_time is None:
                now = time.time_ns()
                span.set_attribute(semconv.SPAN_TRUNCATED, True)
                reason = {semconv.SPAN_TRUNCATED_REASON: semconv.SPAN_TRUNCATED_AT_SHUTDOWN}
                span.add_event(semconv.SPAN_TRUNCATED_EVENT, reason, now)
                span.end(now)
                ended += 1
        # A span started since the snapshot is dropped with the dict: its own end()
        # finds itself gone and is counted as late.
        self.open = _UNTRACKED
        return ended


class OpenSpanRecorder:
    """Says, at each poll of the export thread, which open spans the ``file`` exporter
    records: each goodput span open for 25 ms, once. Export thread only."""

    def __init__(self, tracker: OpenSpanTracker) -> None:
        self._tracker = tracker
        self._after_ns = 25_000_000
        # Without a line for this long while a goodput span is open, the lifetime is alive.
        self._alive_s = 1.0
        # id(span) -> (span, whether it is a goodput span): the open spans looked at
        # already (the span held, so its id stays its own).
        self._seen: dict[int, tuple[object, bool]] = {}

    def due(self, now_ns: int, idle_s: float) -> list[ReadableSpan] | None:
        """The open goodput spans to record now (each once), ``[]`` for "say the
        lifetime is alive" (nothing written for *idle_s* seconds), or ``None``."""
        try:
            spans = list(self._tracker.open.values())
        except RuntimeError:  # changed while copied (another thread): the next poll
            return None
        seen = self._seen
        if len(seen) > len(spans):
            still_open = {id(span) for span in spans}
            seen = self._seen = {key: entry for key, entry in seen.items() if key in still_open}
        cutoff = now_ns - self._after_ns
        due: list[ReadableSpan] = []
        goodput_open = False
        for span in spans:
            entry = seen.get(id(span))
            if entry is not None and entry[0] is span:
                goodput_open = goodput_open or entry[1]
                continue
            start = span.start_time
            if start is None or start > cutoff or span.end_time is not None:
                continue
            record = _snapshot(span)
            if record is None:
                continue
            goodput = (record.attributes or {}).get(semconv.SPAN_CATEGORY) == GOODPUT
            seen[id(span)] = (span, goodput)
            if goodput:
                due.append(record)
                goodput_open = True
        if due:
            return due
        return [] if goodput_open and idle_s >= self._alive_s else None


def _snapshot(span: Any) -> ReadableSpan | None:
    """*span*, still open, copied as it is now; ``None`` when its attributes changed while
    they were copied (the next poll)."""
    if isinstance(span, ReadableSpan):  # the SDK's
        try:
            attributes = dict(span.attributes or {})
        except RuntimeError:
            return None
        context, parent = span.context, span.parent
        resource, scope = span.resource, span.instrumentation_scope
    else:  # a recorded span: its slots, the group's tags read before the attributes (a
        # merge stores the merged attributes first, then clears the tags)
        tags, attributes = span._tags, span._attributes
        attributes = {**(attributes or {}), **(tags or {})}
        context = SpanContext(span._trace_id, span._span_id, False, span._flags)
        parent = span._parent
        if parent is not None and not isinstance(parent, SpanContext):
            parent = SpanContext(parent._trace_id, parent._span_id, False, parent._flags)
        resource, scope = span._tracer.resource, span._tracer.instrumentation_scope
    return ReadableSpan(
        name=span.name,
        context=context,
        parent=parent,
        resource=resource,
        attributes=attributes,
        kind=span.kind,
        start_time=span.start_time,
        instrumentation_scope=scope,
    )
