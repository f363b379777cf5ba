"""What the ``file`` exporter records of spans still open, so that a killed process's
file still says what was running (``docs/trace-format.md``, ``docs/reliability.md``).

A process killed by SIGKILL, or dead of a crash in native code, never runs the
shutdown that ends its open spans; without a record of them, the job span, the
step that crashed and the checkpoint being written vanish, and ``nemo-lens
goodput`` cannot say where the time went. So the export thread, as it polls its
queue, looks at the open spans the tracker already holds
(:class:`~nemo.lens._sdk.open_spans.OpenSpanTracker`: the span path pays nothing
for this) and, for each span of a ``goodput``-category group (its
``lens.span_category``, whatever the group) open for at least
:data:`RECORD_AFTER_MILLIS`, has the exporter write one record: the span as it
is then, without an end. A span that ends sooner (a millisecond step) never
gets one. When a goodput span is open and the exporter has written nothing for
:data:`ALIVE_EVERY_MILLIS`, it writes that the lifetime is alive, so that the
last recorded instant of a process that dies is never long before its death.

The spans are read, never changed, from the export thread while their own
threads may be changing them: a recorded span's fields are copied
(:func:`snapshot`), an SDK span's attributes copied and, should that race with a
write, tried again at the next poll.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanContext

from nemo.lens import semconv
from nemo.lens._sdk.recorded_span import RecordingSpan
from nemo.lens.spec import GOODPUT

if TYPE_CHECKING:
    from nemo.lens._sdk.open_spans import OpenSpanTracker

__all__ = ["ALIVE_EVERY_MILLIS", "RECORD_AFTER_MILLIS", "OpenSpanRecorder", "snapshot"]

RECORD_AFTER_MILLIS: Final = 25
"""How long a goodput span is open before the export thread records it (at its next poll)."""
ALIVE_EVERY_MILLIS: Final = 1000
"""How long the exporter may write nothing, while a goodput span is open, before it says
the lifetime is alive."""


class OpenSpanRecorder:
    """Says, at each poll of the export thread, which open spans to record (see the module
    docstring). Export thread only."""

    def __init__(
        self,
        tracker: OpenSpanTracker,
        *,
        record_after_millis: float = RECORD_AFTER_MILLIS,
        alive_every_millis: float = ALIVE_EVERY_MILLIS,
    ) -> None:
        self._tracker = tracker
        self._after_ns = int(record_after_millis * 1_000_000)
        self._alive_s = alive_every_millis / 1000
        # id(span) -> (span, whether it is a goodput span): the open spans looked at
        # already. Holding the span keeps its id its own; entries of spans that ended
        # are dropped once the dict outgrows the open spans.
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
            record = snapshot(span)
            if record is None:
                continue
            goodput = (record.attributes or {}).get(semconv.SPAN_CATEGORY) == GOODPUT
            seen[id(span)] = (span, goodput)
            if goodput:
                due.append(record)
                goodput_open = True
        if due:
            return due
        if goodput_open and idle_s >= self._alive_s:
            return []
        return None


def snapshot(span: Any) -> ReadableSpan | None:
    """*span* (a recorded span or the SDK's), still open, as it is now; ``None`` when its
    attributes changed while they were being copied."""
    if type(span) is RecordingSpan:
        return _recorded(span)
    try:
        attributes = dict(span.attributes or {})
    except RuntimeError:
        return None
    return ReadableSpan(
        name=span.name,
        context=span.context,
        parent=span.parent,
        resource=span.resource,
        attributes=attributes,
        kind=span.kind,
        start_time=span.start_time,
        instrumentation_scope=span.instrumentation_scope,
    )


def _recorded(span: RecordingSpan) -> ReadableSpan:
    # Reads the slots as they are: the group's tags before the attributes (a merge
    # stores the merged attributes first, then clears the tags), copies of both, and
    # contexts made for the copy, not kept on the span.
    tags = span._tags
    attributes = span._attributes
    copied = dict(attributes) if attributes else {}
    if tags:
        copied.update(tags)
    parent: Any = span._parent
    if type(parent) is RecordingSpan:
        parent = SpanContext(
            parent._trace_id, parent._span_id, False, parent._flags, parent._trace_state
        )
    tracer = span._tracer
    return ReadableSpan(
        name=span._name,
        context=SpanContext(span._trace_id, span._span_id, False, span._flags, span._trace_state),
        parent=parent,
        resource=tracer.resource,
        attributes=copied,
        kind=span._kind,
        start_time=span._start_time,
        instrumentation_scope=tracer.instrumentation_scope,
    )
