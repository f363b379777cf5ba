"""A trace as Chrome trace-event JSON, which Perfetto UI and chrome://tracing open: one process
per rank, one row per span group (extra rows where a group's spans overlap without nesting),
written from the engine in batches (docs/architecture.md)."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, TextIO

from nemo.lens.cli._common import Process
from nemo.lens.cli._progress import progress
from nemo.lens.semconv import LEGACY_SPAN_GROUP, SPAN_GROUP

if TYPE_CHECKING:
    from nemo.lens.cli._engine import Engine

__all__ = [
    "ChromeTrace",
    "Layout",
    "Row",
    "ordered_spans",
    "release_spans",
    "span_args",
    "take_spans",
    "write_chrome_trace",
]

_NS_PER_US: Final = 1000.0
_BATCH: Final = 8192
_WIDE: Final = "chrome_spans"
_DEPTHS: Final = "chrome_depths"
_CAP: Final = 1024
"""How far up the tie-breaking depth follows a span's parents (a parent cycle stops)."""

_COPY: Final = (
    f"CREATE OR REPLACE TEMP TABLE {_WIDE} AS SELECT rank, run_id, service, span_group, "
    "start_ns, end_ns, name, status_code, status_description, trace_id, span_id, "
    "parent_span_id, attributes, events FROM spans"
)
# The depth (how many ancestors the span's trace holds) only of the spans that share their
# process, start and end with another: only there does it decide the order.
_DEPTH: Final = f"""
CREATE OR REPLACE TEMP TABLE {_DEPTHS} AS
WITH RECURSIVE ties AS (
  SELECT rank, run_id, service, start_ns, end_ns FROM {_WIDE}
  GROUP BY rank, run_id, service, start_ns, end_ns HAVING count(*) > 1
),
up (id, trace_id, parent, depth) AS (
  SELECT w.rowid, w.trace_id, w.parent_span_id, 0
  FROM {_WIDE} w JOIN ties t ON w.rank IS NOT DISTINCT FROM t.rank AND w.run_id = t.run_id
    AND w.service = t.service AND w.start_ns = t.start_ns AND w.end_ns = t.end_ns
  UNION ALL
  SELECT up.id, up.trace_id, p.parent_span_id, up.depth + 1
  FROM up JOIN {_WIDE} p ON p.trace_id = up.trace_id AND p.span_id = up.parent
  WHERE up.depth < {_CAP}
)
SELECT id, max(depth) AS depth FROM up GROUP BY id
"""
_ORDERED: Final = (
    f"FROM {_WIDE} w LEFT JOIN {_DEPTHS} d ON d.id = w.rowid ORDER BY w.rank IS NULL, "
    "w.rank, w.run_id, w.service, w.start_ns, w.end_ns DESC, coalesce(d.depth, 0), w.rowid"
)
_LAYOUT: Final = (
    f"SELECT w.rank, w.run_id, w.service, w.span_group, w.start_ns, w.end_ns {_ORDERED}"
)
_EVENTS: Final = (
    "SELECT w.rank, w.run_id, w.service, w.span_group, w.start_ns, w.end_ns, w.name, "
    "w.status_code, w.status_description, w.trace_id, w.span_id, w.parent_span_id, "
    f"w.attributes, w.events {_ORDERED}"
)


@dataclass
class ChromeTrace:
    """What a conversion wrote: how many processes, rows and spans."""

    processes: int = 0
    rows: int = 0
    spans: int = 0


@dataclass
class Row:
    """One tid: a lane of one group, with the end times of its open spans."""

    group: str
    lane: int
    first_start: int
    open_ends: list[int] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.group if self.lane == 1 else f"{self.group} ({self.lane})"

    def admits(self, start: int, end: int, closed: list[tuple[Row, int]] | None = None) -> bool:
        """Take the span if it nests here; spans must arrive in start order. The ends of the
        spans it finds closed by then go to *closed*, innermost first."""
        ends = self.open_ends
        while ends and ends[-1] <= start:
            ended = ends.pop()  # closed before this span starts
            if closed is not None:
                closed.append((self, ended))
        if ends and end > ends[-1]:
            return False  # would overlap the innermost open span partially
        ends.append(end)
        return True


class Layout:
    """One process's rows, fed its spans in start order."""

    def __init__(self) -> None:
        self.lanes_of: dict[str, list[Row]] = defaultdict(list)

    def place(
        self, group: str, start: int, end: int, closed: list[tuple[Row, int]] | None = None
    ) -> Row:
        """The row the span goes to; the ends of spans closed by its start on the rows tried
        go to *closed* (a row tried and refused is still closed up to the start)."""
        lanes = self.lanes_of[group]
        row = next((lane for lane in lanes if lane.admits(start, end, closed)), None)
        if row is None:
            row = Row(group, len(lanes) + 1, start)
            row.admits(start, end)
            lanes.append(row)
        return row

    def rows(self) -> list[Row]:
        """In display order: groups by first start, a group's extra lanes right below its
        first (opened by the group's earliest span, so it carries the group's start)."""
        groups = sorted(
            self.lanes_of.values(), key=lambda lanes: (lanes[0].first_start, lanes[0].group)
        )
        return [row for lanes in groups for row in lanes]


def _us(nanoseconds: int) -> float:
    return nanoseconds / _NS_PER_US


def span_args(
    status: str,
    description: str | None,
    trace_id: str | None,
    span_id: str | None,
    parent_id: str | None,
    attributes: str | None,
) -> dict[str, Any]:
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


def take_spans(engine: Engine) -> tuple[int, int, int]:
    """Copy *engine*'s spans aside for :func:`ordered_spans` (:func:`release_spans` drops the
    copy): how many spans, the earliest start and how many runs; :class:`ValueError` without
    spans."""
    engine.sql(_COPY)
    ((spans, origin, runs),) = engine.rows(
        f"SELECT count(*), min(start_ns), count(DISTINCT run_id) FROM {_WIDE}"
    )
    if not spans:
        engine.sql(f"DROP TABLE {_WIDE}")
        raise ValueError("no spans to convert")
    engine.sql(_DEPTH)
    return int(spans), int(origin), int(runs)


def ordered_spans(engine: Engine) -> Iterator[list[tuple[Any, ...]]]:
    """The spans in batches, each ``(rank, run_id, service, span_group, start_ns, end_ns,
    name, status_code, status_description, trace_id, span_id, parent_span_id, attributes,
    events)``, a process's spans together (ranks in order) by start, an enclosing span before
    the spans it encloses."""
    return _batches(engine, _EVENTS)


def release_spans(engine: Engine) -> None:
    engine.sql(f"DROP TABLE {_DEPTHS}; DROP TABLE {_WIDE}")


class _Writer:
    """The event list: an event a line, a comma before all but the first."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.first = True
        stream.write('{"traceEvents":[\n')

    def put(self, event: dict[str, Any]) -> None:
        self.stream.write(("" if self.first else ",") + _encode(event) + "\n")
        self.first = False


def _lay_out(engine: Engine, spans: int, show_progress: bool | None) -> dict[Process, Layout]:
    """Every process's rows, the processes in rank order (the order the spans come in)."""
    layouts: dict[Process, Layout] = {}
    with progress("laying out", total=spans, unit="span", enabled=show_progress) as bar:
        for batch in _batches(engine, _LAYOUT):
            for rank, run_id, service, group, start, end in batch:
                process = Process(rank, run_id, service)
                layout = layouts.get(process)
                if layout is None:
                    layout = layouts[process] = Layout()
                layout.place(group, start, end)
            bar.update(len(batch))
    return layouts


def _write_metadata(
    out: _Writer, layouts: dict[Process, Layout], several_runs: bool
) -> dict[Process, tuple[int, dict[tuple[str, int], int]]]:
    """Name and order every process and row; each process's pid and its rows' tids."""
    tids = {}
    for pid, (process, layout) in enumerate(layouts.items(), 1):
        out.put(_meta("process_name", pid, 0, name=process.label(with_run=several_runs)))
        out.put(_meta("process_sort_index", pid, 0, sort_index=pid))
        rows = layout.rows()
        tids[process] = (pid, {(row.group, row.lane): tid for tid, row in enumerate(rows, 1)})
        for tid, row in enumerate(rows, 1):
            out.put(_meta("thread_name", pid, tid, name=row.name))
            out.put(_meta("thread_sort_index", pid, tid, sort_index=tid))
    return tids


def write_chrome_trace(
    engine: Engine,
    stream: TextIO,
    *,
    sources: Sequence[str] = (),
    show_progress: bool | None = None,
) -> ChromeTrace:
    """Write *engine*'s spans to *stream* as one Chrome trace JSON object, an event a line
    (for ``grep``), *sources* (the input names) in ``otherData``; :class:`ValueError`
    without spans. *show_progress* is as for :func:`nemo.lens.cli._progress.progress`."""
    from nemo.lens._version import __version__

    spans, origin, runs = take_spans(engine)
    layouts = _lay_out(engine, spans, show_progress)
    out = _Writer(stream)
    tids = _write_metadata(out, layouts, runs > 1)
    trace = ChromeTrace(len(layouts), sum(len(tid_of) for _, tid_of in tids.values()), spans)
    # The second pass places every span again, on fresh rows, to find its tid.
    layouts = {process: Layout() for process in layouts}
    with progress("writing", total=spans, unit="span", enabled=show_progress) as bar:
        for batch in ordered_spans(engine):
            for rank, run_id, service, group, start, end, name, *rest in batch:
                process = Process(rank, run_id, service)
                row = layouts[process].place(group, start, end)
                pid, tid_of = tids[process]
                tid = tid_of[(row.group, row.lane)]
                out.put(
                    {
                        "name": name,
                        "cat": group,
                        "ph": "X",
                        "ts": _us(start - origin),
                        "dur": _us(end - start),
                        "pid": pid,
                        "tid": tid,
                        "args": span_args(*rest[:6]),
                    }
                )
                for event in json.loads(rest[6]) if rest[6] else ():
                    out.put(
                        {
                            "name": event.get("name"),
                            "cat": group,
                            "ph": "i",
                            "s": "t",
                            "ts": _us(event["time_unix_nano"] - origin),
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
    release_spans(engine)
    return trace
