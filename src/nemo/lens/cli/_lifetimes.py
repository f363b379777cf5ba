"""The records of each process lifetime, related: headers, spans, what never ended.

A trace in format 2 (``docs/trace-format.md``) writes a lifetime's resource
once, in a header, and has every other line name its lifetime; besides
finished spans it records spans still open (``open_at_unix_nano``) and that
the lifetime is alive (``alive_at_unix_nano``). :class:`TraceBook` reads lines
of any format through :mod:`nemo.lens.cli._records` and

* gives a span line its lifetime header's resource (a line read before its
  header waits for it, up to :data:`MAX_WAITING` lines; then, and at the end,
  it is given an empty resource: an unknown rank);
* pairs each open record with its span's line, whichever comes first (a
  writer that records a span's start only for ``goodput``-category spans: the
  ids of those spans' lines are kept, per lifetime, not every span's);
* keeps each lifetime's last recorded instant (the latest time any of its
  records holds);
* and, when every input is read (:meth:`TraceBook.finish`), ends each span
  that was recorded open and never finished -- its process died -- at its
  lifetime's last recorded instant, marked as shutdown marks the spans it
  ends (``nemo.span.truncated``, attribute and event), with the reason
  ``process ended without closing the span``.

Format 1's lines (a resource on every line) are read as they always were;
they pair with nothing, since that format records no open spans.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from nemo.lens import semconv
from nemo.lens.cli._records import (
    Interned,
    LineKind,
    Location,
    SpanEvent,
    SpanRecord,
    TraceInputError,
    decode_line,
    header_of,
    int_field,
    kind_of,
    span_from_dict,
)
from nemo.lens.spec import GOODPUT

__all__ = ["MAX_WAITING", "TraceBook"]

MAX_WAITING: Final = 100_000
"""Lines kept waiting for their lifetime's header, at most (beyond: an unknown rank)."""

_NO_RESOURCE: Final[Mapping[str, Any]] = {}


@dataclass
class _Lifetime:
    """What a format-2 lifetime's records said so far."""

    last_ns: int = 0
    """The latest time any of its records holds."""
    open: dict[str, SpanRecord] = field(default_factory=dict)
    """Span id -> its open record, while no line of the span has been read."""
    ended: set[int] = field(default_factory=set)
    """The ids of its goodput spans' lines read before any open record of theirs."""


class TraceBook:
    """Reads a trace's lines and relates each lifetime's records (see the module docstring)."""

    def __init__(self) -> None:
        self.interned: Interned = {}
        self.reconstructed = 0
        """Spans :meth:`finish` ended because their process died with them open."""
        self._headers: dict[str, Mapping[str, Any]] = {}
        self._lifetimes: dict[str, _Lifetime] = {}
        self._waiting: dict[str, list[tuple[dict[str, Any], Location, LineKind]]] = {}
        self._waiting_lines = 0

    def read(
        self, raw: bytes, location: Location
    ) -> tuple[LineKind | Literal["blank"], list[SpanRecord]]:
        """What the line records, and the spans it makes readable now (its own, and
        those that waited for it when it is their header)."""
        value = decode_line(raw, location)
        if value == "blank":
            return "blank", []
        kind = kind_of(value, location)
        if kind == "other":
            return kind, []
        if kind == "header":
            return kind, self._header(value, location)
        named = value.get("lifetime")
        if (named is not None or kind == "alive") and not (isinstance(named, str) and named):
            raise TraceInputError(
                location, f"'lifetime' must be a non-empty string, got {json.dumps(named)}"
            )
        lifetime: str | None = named
        if kind == "alive":
            assert lifetime is not None
            state = self._lifetime(lifetime)
            state.last_ns = max(state.last_ns, int_field(value, "alive_at_unix_nano", location))
            return kind, []
        resource: Mapping[str, Any] | None = None
        if lifetime is not None and "resource" not in value:
            resource = self._headers.get(lifetime)
            if resource is None:
                if self._waiting_lines < MAX_WAITING:
                    # Checked now, so that its error names its line; built when its header comes.
                    span_from_dict(value, location, {}, _NO_RESOURCE, lifetime)
                    self._waiting.setdefault(lifetime, []).append((value, location, kind))
                    self._waiting_lines += 1
                    return kind, []
                resource = _NO_RESOURCE
        span = self._take(value, location, kind, lifetime, resource)
        return kind, [] if span is None else [span]

    def _header(self, value: dict[str, Any], location: Location) -> list[SpanRecord]:
        lifetime, resource = header_of(value, location)
        self._headers.setdefault(lifetime, resource)
        waiting = self._waiting.pop(lifetime, [])
        self._waiting_lines -= len(waiting)
        return [
            span
            for line, where, what in waiting
            if (span := self._take(line, where, what, lifetime, resource)) is not None
        ]

    def _lifetime(self, lifetime: str) -> _Lifetime:
        state = self._lifetimes.get(lifetime)
        if state is None:
            state = self._lifetimes[lifetime] = _Lifetime()
        return state

    def _take(
        self,
        value: dict[str, Any],
        location: Location,
        kind: LineKind,
        lifetime: str | None,
        resource: Mapping[str, Any] | None,
    ) -> SpanRecord | None:
        # The span of a span or open line; an open record is kept, not returned.
        span = span_from_dict(value, location, self.interned, resource, lifetime)
        state = self._lifetimes.get(span.lifetime)
        if state is None:
            if lifetime is None and kind == "span":
                return span  # format 1: nothing to relate
            state = self._lifetime(span.lifetime)
        latest = max(span.end_ns, max((event.time_ns for event in span.events), default=0))
        span_id = span.span_id
        if kind == "open":
            latest = max(latest, int_field(value, "open_at_unix_nano", location))
            state.last_ns = max(state.last_ns, latest)
            if span_id is not None and span_id not in state.open:
                number = _id_number(span_id)
                if number in state.ended:
                    state.ended.discard(number)
                else:
                    state.open[span_id] = span
            return None
        state.last_ns = max(state.last_ns, latest)
        if (
            span_id is not None
            and state.open.pop(span_id, None) is None
            and span.attributes.get(semconv.SPAN_CATEGORY) == GOODPUT
        ):
            state.ended.add(_id_number(span_id))
        return span

    def finish(self) -> list[SpanRecord]:
        """The spans still to come once every input is read: lines whose header never
        came, and the spans that never ended, ended (see the module docstring)."""
        spans = [
            span
            for lifetime, lines in self._waiting.items()
            for line, where, what in lines
            if (span := self._take(line, where, what, lifetime, _NO_RESOURCE)) is not None
        ]
        self._waiting.clear()
        self._waiting_lines = 0
        for state in self._lifetimes.values():
            for span in state.open.values():
                spans.append(_ended_at(span, max(state.last_ns, span.start_ns)))
                self.reconstructed += 1
            state.open.clear()
        return spans


def _ended_at(span: SpanRecord, end_ns: int) -> SpanRecord:
    return dataclasses.replace(
        span,
        end_ns=end_ns,
        attributes={**span.attributes, semconv.SPAN_TRUNCATED: True},
        events=(
            *span.events,
            SpanEvent(
                semconv.SPAN_TRUNCATED_EVENT,
                end_ns,
                {semconv.SPAN_TRUNCATED_REASON: semconv.SPAN_TRUNCATED_PROCESS_ENDED},
            ),
        ),
    )


def _id_number(span_id: str) -> int:
    # Kept as a number: a third of the memory of the text, for the ids kept per step.
    try:
        return int(span_id, 16)
    except ValueError:
        return hash(span_id)
