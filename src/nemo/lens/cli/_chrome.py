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

Streaming
    The spans are ordered in the engine (``queries/chrome_spans.sql``) into a
    temporary table and read twice in batches: once to lay the rows out (only
    each row's open ends are kept), once to write the events, so memory stays
    flat whatever the trace's size.

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
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, TextIO

from nemo.lens.cli._progress import progress
from nemo.lens.cli._records import Process
from nemo.lens.cli._sdk_json import event_time_ns
from nemo.lens.semconv import LEGACY_SPAN_GROUP, SPAN_GROUP

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    from nemo.lens.cli._engine import Engine

__all__ = ["ChromeTrace", "write_chrome_trace"]

_NS_PER_US: Final = 1000.0
_TABLE: Final = "chrome_spans"
_BATCH: Final = 10_000
_LAYOUT: Final = (
    f"SELECT run_id, rank, service, span_group, start_ns, end_ns FROM {_TABLE} ORDER BY position"
)
_EVENTS: Final = (
    "SELECT run_id, rank, service, span_group, start_ns, end_ns, name, status_code, "
    "status_description, trace_id, span_id, parent_span_id, attributes, events "
    f"FROM {_TABLE} ORDER BY position"
)


@dataclass
class ChromeTrace:
    """What a conversion wrote: how many processes, rows and spans."""

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


class _Layout:
    """One process's lanes, fed its spans in start order."""

    def __init__(self) -> None:
        self.lanes_of: dict[str, list[_Row]] = defaultdict(list)

    def place(self, group: str, start: int, end: int) -> _Row:
        lanes = self.lanes_of[group]
        row = next((lane for lane in lanes if lane.admits(start, end)), None)
        if row is None:
            row = _Row(group, len(lanes) + 1, start)
            row.admits(start, end)
            lanes.append(row)
        return row

    def rows(self) -> list[tuple[str, int]]:
        """(group, lane) in display order: groups by first start, a group's lanes below it."""
        groups = sorted(
            self.lanes_of.values(), key=lambda lanes: (lanes[0].first_start, lanes[0].group)
        )
        return [(row.group, row.lane) for lanes in groups for row in lanes]


def _us(nanoseconds: int) -> float:
    return nanoseconds / _NS_PER_US


def _args(row: Sequence[Any]) -> dict[str, Any]:
    status, description, trace_id, span_id, parent_id, attributes = row[7:13]
    # The group is the row, not an argument (under either key a trace may carry).
    args = {
        key: value
        for key, value in (json.loads(attributes) if attributes else {}).items()
        if key not in (SPAN_GROUP, LEGACY_SPAN_GROUP)
    }
    if status != "UNSET":
        args["status"] = f"{status}: {description}" if description else status
    args["span.id"] = span_id
    args["span.parent_id"] = parent_id
    args["trace.id"] = trace_id
    return args


def _meta(kind: str, pid: int, tid: int, **args: Any) -> dict[str, Any]:
    return {"name": kind, "ph": "M", "ts": 0, "pid": pid, "tid": tid, "args": args}


def _encode(event: dict[str, Any]) -> str:
    return json.dumps(event, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def _batches(engine: Engine, text: str) -> Iterator[list[tuple[Any, ...]]]:
    cursor = engine.sql(text)
    while batch := cursor.fetchmany(_BATCH):
        yield batch


def write_chrome_trace(
    engine: Engine,
    stream: TextIO,
    *,
    sources: Sequence[str] = (),
    show_progress: bool | None = None,
) -> ChromeTrace:
    """Write *engine*'s spans to *stream* as one Chrome trace JSON object, an event per line
    (readable with ``grep``), batch by batch (see the module docstring)."""
    from nemo.lens._version import __version__
    from nemo.lens.cli._engine import query

    engine.sql(f"CREATE OR REPLACE TEMP TABLE {_TABLE} AS {query('chrome_spans')}")
    ((spans, origin, runs),) = engine.rows(
        f"SELECT count(*), min(start_ns), count(DISTINCT run_id) FROM {_TABLE}"
    )
    if not spans:
        raise ValueError("no spans to convert")
    layouts: dict[Process, _Layout] = {}
    with progress("laying out", total=spans, unit="span", enabled=show_progress) as bar:
        for batch in _batches(engine, _LAYOUT):
            for run_id, rank, service, group, start, end in batch:
                process = Process(rank, run_id, service)
                layout = layouts.get(process)
                if layout is None:
                    layout = layouts[process] = _Layout()
                layout.place(group, start, end)
            bar.update(len(batch))
    trace = ChromeTrace(processes=len(layouts), spans=spans)
    tids: dict[Process, tuple[int, dict[tuple[str, int], int]]] = {}
    stream.write('{"traceEvents":[\n')
    first = True

    def put(event: dict[str, Any]) -> None:
        nonlocal first
        stream.write(("" if first else ",") + _encode(event) + "\n")
        first = False

    for pid, process in enumerate(layouts, 1):  # in rank order, as the spans came
        put(_meta("process_name", pid, 0, name=process.label(with_run=runs > 1)))
        put(_meta("process_sort_index", pid, 0, sort_index=pid))
        rows = layouts[process].rows()
        tids[process] = (pid, {row: tid for tid, row in enumerate(rows, 1)})
        trace.rows += len(rows)
        for tid, (group, lane) in enumerate(rows, 1):
            name = group if lane == 1 else f"{group} ({lane})"
            put(_meta("thread_name", pid, tid, name=name))
            put(_meta("thread_sort_index", pid, tid, sort_index=tid))
    layouts = {process: _Layout() for process in layouts}
    with progress("writing", total=spans, unit="span", enabled=show_progress) as bar:
        for batch in _batches(engine, _EVENTS):
            for row in batch:
                run_id, rank, service, group, start, end, name = row[:7]
                process = Process(rank, run_id, service)
                placed = layouts[process].place(group, start, end)
                pid, tid_of = tids[process]
                tid = tid_of[(placed.group, placed.lane)]
                put(
                    {
                        "name": name,
                        "cat": group,
                        "ph": "X",
                        "ts": _us(start - origin),
                        "dur": _us(end - start),
                        "pid": pid,
                        "tid": tid,
                        "args": _args(row),
                    }
                )
                for event in json.loads(row[13]) if row[13] else ():
                    put(
                        {
                            "name": str(event.get("name", "")),
                            "cat": group,
                            "ph": "i",
                            "s": "t",
                            "ts": _us(event_time_ns(event) - origin),
                            "pid": pid,
                            "tid": tid,
                            "args": dict(event.get("attributes") or {}),
                        }
                    )
            bar.update(len(batch))
    other = {"generator": f"nemo-lens {__version__}", "origin_unix_nano": origin}
    stream.write(
        '],"displayTimeUnit":"ms","otherData":'
        + _encode({**other, "sources": list(sources)})
        + "}\n"
    )
    engine.sql(f"DROP TABLE {_TABLE}")
    return trace
