"""Convert spans to Chrome trace-event JSON, which Perfetto UI and chrome://tracing open.

The layout
    * One **process** per rank (``pid`` 1, 2, ... in rank order), named
      ``rank N`` (``rank N of run R`` when the inputs hold several runs).
    * One **row** (a ``tid``) per span group, named for the group and ordered by
      when the group first fired, so the job's row is on top and the rows read
      like the call tree. Spans without a group go to a row named ``(none)``.
    * Each span is one complete event (``"ph": "X"``) with ``ts`` and ``dur`` in
      microseconds, its group as ``cat``, and its attributes, ids and status in
      ``args``; each span event (an ``exception``, say) is an instant event
      (``"ph": "i"``) on its span's row.

Nesting
    The viewers stack the complete events of one row by time containment and
    require them to nest: two spans of one row may not overlap partially. Spans
    of one group that do overlap without nesting (concurrent work on two
    threads) are therefore spread over extra rows, ``step (2)`` and so on; every
    row is properly nested and each span stays within its parent in time.

Timestamps
    Times are relative to the earliest span start of the inputs (kept in
    ``otherData.origin_unix_nano``): epoch nanoseconds as microseconds would
    need 19 significant digits, more than the double a viewer reads a number
    into. Converting an integer nanosecond count to microseconds preserves
    order, so a child never appears to start before its parent or end after it.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, TextIO

from nemo.lens.cli._progress import progress
from nemo.lens.cli._trace_io import Process, SpanRecord
from nemo.lens.semconv import LEGACY_SPAN_GROUP, SPAN_GROUP

__all__ = ["ChromeTrace", "build_chrome_trace", "write_chrome_trace"]

_NS_PER_US: Final = 1000.0


@dataclass
class ChromeTrace:
    """A converted trace: its events and the ``otherData`` block, ready to write."""

    events: list[dict[str, Any]]
    other_data: dict[str, Any]
    processes: int = 0
    rows: int = 0
    spans: int = 0


@dataclass
class _Row:
    """One tid: a lane of one group, with the end times of its open spans."""

    group: str
    lane: int
    first_start: int
    open_ends: list[int] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.group if self.lane == 1 else f"{self.group} ({self.lane})"

    def admits(self, start: int, end: int) -> bool:
        """Take the span if it nests here; spans must arrive in start order."""
        ends = self.open_ends
        while ends and ends[-1] <= start:
            ends.pop()  # closed before this span starts
        if ends and end > ends[-1]:
            return False  # would overlap the innermost open span partially
        ends.append(end)
        return True


def _depths(spans: Sequence[SpanRecord]) -> list[int]:
    """Each span's depth in its trace's tree (0 for roots and orphans).

    Only used to order a parent before a child that has exactly its start and
    end, which time alone cannot do.
    """
    index = {
        (span.trace_id, span.span_id): position
        for position, span in enumerate(spans)
        if span.span_id is not None
    }
    depths: list[int | None] = [None] * len(spans)
    for position in range(len(spans)):
        chain: list[int] = []
        current: int | None = position
        while current is not None and depths[current] is None and current not in chain:
            chain.append(current)
            span = spans[current]
            current = (
                index.get((span.trace_id, span.parent_span_id))
                if span.parent_span_id is not None
                else None
            )
        base = -1 if current is None or current in chain else depths[current]
        assert base is not None
        for offset, member in enumerate(reversed(chain), 1):
            depths[member] = base + offset
    return [depth or 0 for depth in depths]


def _assign_rows(
    spans: Sequence[SpanRecord], indices: Sequence[int]
) -> tuple[list[_Row], list[tuple[int, _Row]]]:
    """Place one process's spans (``indices``, in start order) on rows.

    Returns the rows in display order -- groups by first start, a group's extra
    lanes right below its first -- and each span index with its row.
    """
    lanes_of: dict[str, list[_Row]] = defaultdict(list)
    placed: list[tuple[int, _Row]] = []
    for i in indices:
        span = spans[i]
        lanes = lanes_of[span.group]
        row = next((lane for lane in lanes if lane.admits(span.start_ns, span.end_ns)), None)
        if row is None:
            row = _Row(span.group, len(lanes) + 1, span.start_ns)
            row.admits(span.start_ns, span.end_ns)
            lanes.append(row)
        placed.append((i, row))
    # A group's first lane was opened by its earliest span, so it carries the group's start.
    groups = sorted(lanes_of.values(), key=lambda lanes: (lanes[0].first_start, lanes[0].group))
    return [row for lanes in groups for row in lanes], placed


def _us(nanoseconds: int) -> float:
    return nanoseconds / _NS_PER_US


def _args(span: SpanRecord) -> dict[str, Any]:
    # The group is the row, not an argument (under either key a trace may carry).
    args = {
        key: value
        for key, value in span.attributes.items()
        if key not in (SPAN_GROUP, LEGACY_SPAN_GROUP)
    }
    if span.status != "UNSET":
        args["status"] = (
            f"{span.status}: {span.status_description}" if span.status_description else span.status
        )
    args["span.id"] = span.span_id
    args["span.parent_id"] = span.parent_span_id
    args["trace.id"] = span.trace_id
    return args


def build_chrome_trace(
    spans: Sequence[SpanRecord],
    *,
    sources: Sequence[str] = (),
    show_progress: bool | None = None,
) -> ChromeTrace:
    """Lay ``spans`` out as Chrome trace events (see the module docstring).

    ``sources`` (the input names) is recorded in ``otherData``; ``show_progress``
    is as for :func:`nemo.lens.cli._progress.progress`.
    """
    if not spans:
        raise ValueError("no spans to convert")
    from nemo.lens._version import __version__

    origin = min(span.start_ns for span in spans)
    depths = _depths(spans)
    order = sorted(
        range(len(spans)),
        key=lambda i: (spans[i].start_ns, -spans[i].end_ns, depths[i]),
    )
    by_process: dict[Process, list[int]] = defaultdict(list)
    for i in order:
        by_process[spans[i].process].append(i)
    processes = sorted(by_process, key=Process.sort_key)
    several_runs = len({process.run_id for process in processes}) > 1

    metadata: list[dict[str, Any]] = []
    timed: list[dict[str, Any]] = []
    row_count = 0
    with progress("laying out", total=len(spans), unit="span", enabled=show_progress) as bar:
        for pid, process in enumerate(processes, 1):
            row_count += _lay_out_process(
                spans,
                by_process[process],
                process.label(with_run=several_runs),
                pid,
                origin,
                metadata,
                timed,
                bar.update,
            )
    return ChromeTrace(
        events=metadata + timed,
        other_data={
            "generator": f"nemo-lens {__version__}",
            "origin_unix_nano": origin,
            "sources": list(sources),
        },
        processes=len(processes),
        rows=row_count,
        spans=len(spans),
    )


# Spans laid out between progress updates: keeps the bar's cost out of the loop.
_PROGRESS_EVERY: Final = 4096


def _lay_out_process(
    spans: Sequence[SpanRecord],
    indices: Sequence[int],
    label: str,
    pid: int,
    origin: int,
    metadata: list[dict[str, Any]],
    timed: list[dict[str, Any]],
    advance: Callable[[int], None],
) -> int:
    """Append one process's metadata and events; return how many rows it has."""
    metadata += [
        _meta("process_name", pid, 0, name=label),
        _meta("process_sort_index", pid, 0, sort_index=pid),
    ]
    rows, placed = _assign_rows(spans, indices)
    tids = {id(row): tid for tid, row in enumerate(rows, 1)}
    for tid, row in enumerate(rows, 1):
        metadata += [
            _meta("thread_name", pid, tid, name=row.name),
            _meta("thread_sort_index", pid, tid, sort_index=tid),
        ]
    for count, (i, row) in enumerate(placed, 1):
        span = spans[i]
        tid = tids[id(row)]
        timed.append(
            {
                "name": span.name,
                "cat": span.group,
                "ph": "X",
                "ts": _us(span.start_ns - origin),
                "dur": _us(span.duration_ns),
                "pid": pid,
                "tid": tid,
                "args": _args(span),
            }
        )
        timed.extend(
            {
                "name": event.name,
                "cat": span.group,
                "ph": "i",
                "s": "t",
                "ts": _us(event.time_ns - origin),
                "pid": pid,
                "tid": tid,
                "args": dict(event.attributes),
            }
            for event in span.events
        )
        if count % _PROGRESS_EVERY == 0:
            advance(_PROGRESS_EVERY)
    advance(len(placed) % _PROGRESS_EVERY)
    return len(rows)


def _meta(kind: str, pid: int, tid: int, **args: Any) -> dict[str, Any]:
    return {"name": kind, "ph": "M", "ts": 0, "pid": pid, "tid": tid, "args": args}


def _encode(event: dict[str, Any]) -> str:
    return json.dumps(event, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def _chunks(trace: ChromeTrace) -> Iterator[str]:
    yield '{"traceEvents":[\n'
    for position, event in enumerate(trace.events):
        yield ("," if position else "") + _encode(event) + "\n"
    yield '],"displayTimeUnit":"ms","otherData":' + _encode(trace.other_data) + "}\n"


def write_chrome_trace(
    trace: ChromeTrace, stream: TextIO, *, show_progress: bool | None = None
) -> None:
    """Write ``trace`` as one JSON object, an event per line (readable with ``grep``).

    Streams event by event, so a trace of millions of spans never exists as one
    string in memory. ``show_progress`` is as for :func:`nemo.lens.cli._progress.progress`.
    """
    # Two chunks more than events: the opening and the closing of the object.
    total = len(trace.events) + 2
    with progress("writing", total=total, unit="ev", enabled=show_progress) as bar:
        for chunk in _chunks(trace):
            stream.write(chunk)
            bar.update()
