"""The open spans of a pipeline: which spans started and have not ended yet.

Shutdown ends them, marked truncated, instead of letting them vanish
(:meth:`OpenSpanTracker.close`); the ``file`` exporter's export thread records the
goodput spans among them for a reader of a process that dies
(:mod:`nemo.lens._sdk.open_records`); the recording tracer and the primitives' scopes
add and remove the spans they make (:mod:`nemo.lens._sdk.recording`,
:mod:`nemo.lens._sdk.scopes`). This module imports none of them: each depends on it.
"""

from __future__ import annotations

import time
from typing import Any, Final

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor

from nemo.lens import semconv
from nemo.lens._core import fork as _fork

__all__ = ["OpenSpanTracker"]


class _Untracked(dict[object, Any]):
    """What a closed tracker's ``open`` is: it keeps nothing.

    A span started after shutdown is not held here, and a span's ``end()``
    finds itself "taken out", so it goes on to its processor as any span ending
    after shutdown does (counted, not exported). The live tracker's ``open``
    stays a plain ``dict``: the span path pays nothing for this.
    """

    __slots__ = ()

    def __setitem__(self, key: object, value: Any) -> None:
        """Keep nothing."""

    def pop(self, key: object, default: Any = None) -> Any:
        """Whoever ends a span after shutdown owns its end: it was never here."""
        return key


_UNTRACKED: Final = _Untracked()


class OpenSpanTracker(SpanProcessor):
    """Remembers spans that started and have not ended, so shutdown can end them.

    Spans are held strongly: a span that was started and never ended (a crash
    path, a generator never resumed) is exported, marked truncated, at shutdown
    instead of vanishing. The SDK's spans are keyed by (trace id, span id)
    because ``on_end`` receives a read-only copy, not the object ``on_start``
    saw; the spans nemo.lens's recording tracer makes
    (:class:`~nemo.lens._sdk.recorded_span.RecordingSpan`) add and remove
    themselves, keyed by the span object. After :meth:`close` it holds nothing:
    a span started after shutdown is kept nowhere.

    No lock: single ``dict`` operations are atomic. A lock taken on every span
    start and end would sometimes be held by the main thread at the instant a
    SIGTERM handler runs there, and the shutdown that handler starts would then
    wait for it in vain; after ``fork`` it could be held by a thread the child
    does not have.
    """

    def __init__(self) -> None:
        self.open: dict[object, Any] = {}
        """The open spans, oldest first. A recorded span's ``end()`` takes itself
        out of it, and only the thread that does exports the span."""
        _fork.register(self)

    def _after_fork_in_child(self) -> None:
        # The parent's open spans are the parent's to end; a child ending its
        # copies would export them twice, under the same ids. A closed tracker
        # stays closed.
        if self.open is not _UNTRACKED:
            self.open = {}

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        """Remember *span*."""
        context = span.context
        if context is not None:
            self.open[(context.trace_id, context.span_id)] = span

    def on_end(self, span: ReadableSpan) -> None:
        """Forget *span*."""
        context = span.context
        if context is not None:
            self.open.pop((context.trace_id, context.span_id), None)

    @property
    def open_count(self) -> int:
        """How many spans are open right now."""
        return len(self.open)

    def end_open_spans(self) -> int:
        """End every open span, marked truncated (see :meth:`truncate`); return how many."""
        # A snapshot: each span's end() takes it out of the dict, and a span whose
        # own thread ends it at this moment is exported once, by whoever took it.
        spans = list(self.open.values())
        ended = 0
        # Children were started after their parents: end them first so that each
        # span's end time is not later than its parent's.
        for span in reversed(spans):
            if span.end_time is None:
                self.truncate(span)
                ended += 1
        return ended

    @staticmethod
    def truncate(span: Any) -> None:
        """End *span* as shutdown does: ``nemo.span.truncated = True``, and an event
        ``nemo.span.truncated`` whose ``nemo.span.truncated.reason`` says why."""
        now = time.time_ns()
        span.set_attribute(semconv.SPAN_TRUNCATED, True)
        span.add_event(
            semconv.SPAN_TRUNCATED_EVENT,
            {semconv.SPAN_TRUNCATED_REASON: semconv.SPAN_TRUNCATED_AT_SHUTDOWN},
            now,
        )
        span.end(now)

    def close(self) -> int:
        """End the open spans (:meth:`end_open_spans`), then track nothing more.

        Returns how many spans were ended. A span started from now on -- by a
        tracer cached before shutdown, say -- is not remembered, so nothing
        keeps it alive; when it ends it goes to its processor, which counts it
        as ended after shutdown.
        """
        ended = self.end_open_spans()
        # A span started between the snapshot and here is in the dict dropped now:
        # its own end() finds itself gone from _UNTRACKED and is counted as late.
        self.open = _UNTRACKED
        return ended

    def shutdown(self) -> None:
        """Nothing to release (closing is the pipeline's first shutdown step)."""

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Nothing is buffered here."""
        return True
