"""What ``nemo-lens report`` shows, gathered in one pass over the spans with bounded memory.

Three views, each built from the stream of spans without keeping the spans:

Timeline
    One row per rank and span group (ranks in order, a rank's groups in the
    order they first fired). Every span is kept as four machine integers (row,
    start, end, name), 28 bytes, so a million spans take about 28 MB; the
    :data:`DRAWN_SPANS` longest of them are also kept with their attributes and
    drawn as bars that show name, duration and attributes on hover. What is not
    drawn as a bar still counts: each row carries a coverage strip of
    :data:`COVERAGE_BINS` bins, the share of each bin its spans cover, drawn
    behind the bars. The page says how many spans were drawn of how many.
    Restarts (the gaps between one process lifetime and the next) are marked.
Step durations
    Every step span (a group feeding the ``productive`` bucket) with its
    iteration and duration, per rank; an execution whose iteration ran again
    later, or that never finished (truncated), is marked as wasted. Past
    :data:`STEP_POINTS` steps a rank's series is reduced to that many bins of
    consecutive iterations (mean and maximum each). A table per rank gives the
    median, 90th percentile and maximum, and how often the rank was the slowest
    at an iteration: the straggler.
Goodput
    The figures of :mod:`nemo.lens.cli._goodput` (the engine's) for every run and rank.

:class:`ReportBuilder` consumes spans (:meth:`ReportBuilder.add`, rows of the
engine's ``queries/report_spans.sql`` read in batches) and returns
the page's data (:meth:`ReportBuilder.data`), a JSON-ready dict that
:mod:`nemo.lens.cli._report_html` renders.
"""

from __future__ import annotations

import heapq
import json
import math
from array import array
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, NamedTuple

from nemo.lens import semconv
from nemo.lens.cli._goodput import RunGoodput
from nemo.lens.cli._goodput_format import run_json
from nemo.lens.cli._progress import Progress, progress
from nemo.lens.cli._records import Process
from nemo.lens.cli._summary import percentile

if TYPE_CHECKING:
    from nemo.lens.cli._engine import Engine

__all__ = ["COVERAGE_BINS", "DRAWN_SPANS", "STEP_POINTS", "ReportBuilder", "ReportSpan"]

DRAWN_SPANS: Final = 20_000
"""Spans drawn one by one, with hover details: the longest ones."""
COVERAGE_BINS: Final = 1_000
"""Bins of a row's coverage strip (what is too small or too many to draw one by one)."""
STEP_POINTS: Final = 2_000
"""Points of a rank's step-duration series before it is reduced to bins."""
MAX_ROWS: Final = 400
"""Timeline rows at most (ranks in order); the page says when ranks were left out."""
_ATTRIBUTE_CHARS: Final = 200
_ATTRIBUTES_SHOWN: Final = 24
_PROGRESS_EVERY: Final = 1 << 16
_BATCH: Final = 10_000
"""Rows fetched from the engine at a time."""
_HIDDEN_ATTRIBUTES: Final = frozenset({semconv.SPAN_GROUP, semconv.LEGACY_SPAN_GROUP})


class ReportSpan(NamedTuple):
    """What the report needs of one span (a row of ``queries/report_spans.sql``)."""

    process: Process
    group: str
    name: str
    lifetime: str
    start_ns: int
    end_ns: int
    status: str
    status_description: str | None
    attributes: str
    """Its attributes as JSON text."""
    iteration: int | None
    truncated: bool
    step: bool
    """Whether it feeds the productive bucket."""


@dataclass
class _Drawn:
    """A span kept for drawing (ordered by duration in the heap)."""

    row: int
    start: int
    end: int
    name: int
    attributes: str


@dataclass
class _Steps:
    """One rank's step spans: iteration (or -1), start, end, in arrival order; which of
    them never finished (truncated: wasted, whatever ran later)."""

    iterations: array[int] = field(default_factory=lambda: array("q"))
    starts: array[int] = field(default_factory=lambda: array("q"))
    ends: array[int] = field(default_factory=lambda: array("q"))
    truncated: set[int] = field(default_factory=set)


class ReportBuilder:
    """Feed it every span (:meth:`add`), then take the page's data (:meth:`data`)."""

    def __init__(
        self,
        runs: list[RunGoodput],
        buckets: Mapping[str, str],
        *,
        drawn_spans: int = DRAWN_SPANS,
        show_progress: bool | None = None,
    ) -> None:
        self.runs = runs
        """Every run's goodput (from the engine)."""
        self.buckets = buckets
        """Group -> the bucket its row shows (goodput groups that name one)."""
        self.show_progress = show_progress
        self._drawn_limit = drawn_spans
        self._rows: dict[tuple[Process, str], int] = {}
        self._row_first: list[tuple[int, int]] = []
        """Each row's first span: (start, -end), so on a tie the enclosing group comes first."""
        self._names: dict[str, int] = {}
        self._row_of = array("i")
        self._starts = array("q")
        self._ends = array("q")
        self._heap: list[tuple[int, int, _Drawn]] = []
        self._steps: dict[Process, _Steps] = defaultdict(_Steps)
        self._lifetimes: dict[Process, dict[str, list[int]]] = defaultdict(dict)
        self.spans = 0

    @classmethod
    def from_engine(cls, engine: Engine, **options: Any) -> ReportBuilder:
        """A builder fed every span of *engine*, read in batches (``report_spans.sql``)."""
        from nemo.lens.cli._engine import query
        from nemo.lens.cli._goodput import goodput_runs

        buckets = dict(engine.rows(query("row_buckets")))
        builder = cls(goodput_runs(engine), buckets, **options)
        cursor = engine.sql(query("report_spans"))
        processes: dict[tuple[Any, ...], Process] = {}
        while batch := cursor.fetchmany(_BATCH):
            for run_id, rank, service, group, *rest in batch:
                key = (run_id, rank, service)
                process = processes.get(key)
                if process is None:
                    process = processes[key] = Process(rank, run_id, service)
                builder.add(ReportSpan(process, group, *rest))
        return builder

    def add(self, span: ReportSpan) -> None:
        """Take one span into every view."""
        key = (span.process, span.group)
        row = self._rows.get(key)
        first = (span.start_ns, -span.end_ns)
        if row is None:
            row = self._rows[key] = len(self._rows)
            self._row_first.append(first)
        elif first < self._row_first[row]:
            self._row_first[row] = first
        name = self._names.setdefault(span.name, len(self._names))
        self._row_of.append(row)
        self._starts.append(span.start_ns)
        self._ends.append(span.end_ns)
        self.spans += 1
        duration = span.end_ns - span.start_ns
        heap = self._heap
        if len(heap) < self._drawn_limit or duration > heap[0][0]:
            drawn = _Drawn(row, span.start_ns, span.end_ns, name, _attributes(span))
            # The sequence number breaks ties: drawn spans are never compared.
            item = (duration, self.spans, drawn)
            if len(heap) < self._drawn_limit:
                heapq.heappush(heap, item)
            else:
                heapq.heapreplace(heap, item)
        extent = self._lifetimes[span.process].get(span.lifetime)
        if extent is None:
            self._lifetimes[span.process][span.lifetime] = [span.start_ns, span.end_ns]
        else:
            extent[0], extent[1] = min(extent[0], span.start_ns), max(extent[1], span.end_ns)
        if span.step:
            steps = self._steps[span.process]
            if span.truncated:
                steps.truncated.add(len(steps.starts))
            steps.iterations.append(-1 if span.iteration is None else span.iteration)
            steps.starts.append(span.start_ns)
            steps.ends.append(span.end_ns)

    def data(self, *, title: str, sources: Sequence[str], generator: str) -> dict[str, Any]:
        """The page's data: a JSON-ready dict (see :mod:`nemo.lens.cli._report_html`)."""
        if not self.spans:
            raise ValueError("no spans to report")
        origin = min(self._starts)
        end = max(self._ends)
        processes = sorted({process for process, _ in self._rows}, key=Process.sort_key)
        several_runs = len({p.run_id for p in processes}) > 1
        several_services = len({p.service for p in processes}) > 1
        labels = {
            p: (f"{p.service} " if several_services and p.service else "")
            + p.label(with_run=several_runs)
            for p in processes
        }
        rank_order = {process: index for index, process in enumerate(processes)}
        order = sorted(
            self._rows.items(),
            key=lambda item: (rank_order[item[0][0]], self._row_first[item[1]], item[0][1]),
        )
        shown = order[:MAX_ROWS]
        position = {row: index for index, (_, row) in enumerate(shown)}
        rows = [
            {"process": labels[process], "group": group, "bucket": self._bucket_of(group)}
            for (process, group), _ in shown
        ]

        def ms(ns: int) -> float:
            return round((ns - origin) / 1e6, 6)

        drawn = sorted(
            (entry for _, _, entry in self._heap if entry.row in position),
            key=lambda d: (position[d.row], d.start),
        )
        names = list(self._names)
        return {
            "title": title,
            "generator": generator,
            "sources": list(sources),
            "origin_unix_nano": origin,
            "wall_ms": ms(end),
            "span_count": self.spans,
            "drawn_count": len(drawn),
            "processes": len(processes),
            "rows_total": len(order),
            "rows": rows,
            "names": names,
            "spans": [
                [position[d.row], ms(d.start), round((d.end - d.start) / 1e6, 6), d.name]
                for d in drawn
            ],
            "attributes": [d.attributes for d in drawn],
            "coverage": self._coverage(position, origin, end),
            "coverage_bins": COVERAGE_BINS,
            "restarts": self._restarts(labels, ms),
            "steps": self._step_series(processes, labels, ms),
            "goodput": [run_json(run) for run in self.runs],
        }

    def _bucket_of(self, group: str) -> str:
        return self.buckets.get(group, "")

    def _coverage(self, position: Mapping[int, int], origin: int, end: int) -> dict[str, list[int]]:
        """Row -> the share (0..255) of each bin its spans cover; rows fully drawn left out."""
        drawn_rows: dict[int, int] = defaultdict(int)
        for _, _, entry in self._heap:
            drawn_rows[entry.row] += 1
        per_row: dict[int, int] = defaultdict(int)
        for row in self._row_of:
            per_row[row] += 1
        needed = {row for row in position if per_row[row] > drawn_rows[row]}
        if not needed:
            return {}
        width = max(1, end - origin) / COVERAGE_BINS
        covered: dict[int, list[float]] = {row: [0.0] * COVERAGE_BINS for row in needed}
        bar = progress("laying out", total=self.spans, unit="span", enabled=self.show_progress)
        with bar:
            self._cover(covered, origin, width, bar)
        return {
            str(position[row]): [min(255, math.ceil(255 * share)) for share in bins]
            for row, bins in covered.items()
        }

    def _cover(
        self, covered: dict[int, list[float]], origin: int, width: float, bar: Progress
    ) -> None:
        spans = zip(self._row_of, self._starts, self._ends, strict=True)
        for count, (row, start, stop) in enumerate(spans, 1):
            if count % _PROGRESS_EVERY == 0:
                bar.update(_PROGRESS_EVERY)
            bins = covered.get(row)
            if bins is None:
                continue
            left = (start - origin) / width
            right = (stop - origin) / width
            first = min(int(left), COVERAGE_BINS - 1)
            last = min(int(right), COVERAGE_BINS - 1)
            if first == last:
                bins[first] += right - left
                continue
            bins[first] += first + 1 - left
            for index in range(first + 1, last):
                bins[index] += 1.0
            bins[last] += right - last

    def _restarts(self, labels: Mapping[Process, str], ms: Any) -> list[dict[str, Any]]:
        """The gaps between one lifetime of a rank and its next."""
        gaps = []
        for process in labels:  # ranks in order
            lifetimes = self._lifetimes.get(process, {})
            covered_end: int | None = None
            for start, end in sorted(lifetimes.values()):
                if covered_end is not None and start > covered_end:
                    gaps.append(
                        {"process": labels[process], "start": ms(covered_end), "end": ms(start)}
                    )
                covered_end = end if covered_end is None else max(covered_end, end)
        return gaps

    def _step_series(
        self, processes: Sequence[Process], labels: Mapping[Process, str], ms: Any
    ) -> dict[str, Any]:
        ranks = []
        slowest: dict[int, tuple[int, Process | None]] = {}
        for process in processes:
            steps = self._steps.get(process)
            if steps is None:
                continue
            count = len(steps.starts)
            order = sorted(range(count), key=lambda i: steps.starts[i])
            last_start: dict[int, int] = {}
            for i in order:
                if steps.iterations[i] >= 0:
                    last_start[steps.iterations[i]] = steps.starts[i]
            points = []
            for ordinal, i in enumerate(order, 1):
                iteration = steps.iterations[i]
                duration = steps.ends[i] - steps.starts[i]
                wasted = i in steps.truncated or (
                    iteration >= 0 and last_start[iteration] > steps.starts[i]
                )
                x = iteration if iteration >= 0 else ordinal
                points.append((x, duration, wasted))
                if not wasted:
                    best = slowest.get(x)
                    if best is None or duration > best[0]:
                        slowest[x] = (duration, process)
                    elif duration == best[0] and best[1] != process:
                        slowest[x] = (duration, None)  # a tie: nobody straggled
            counted = sorted(d for _, d, wasted in points if not wasted)
            ranks.append(
                {
                    "process": labels[process],
                    "count": count,
                    "wasted": sum(1 for _, _, wasted in points if wasted),
                    "median_ms": percentile(counted, 0.5) / 1e6 if counted else None,
                    "p90_ms": percentile(counted, 0.9) / 1e6 if counted else None,
                    "max_ms": counted[-1] / 1e6 if counted else None,
                    **_series(sorted(points)),
                }
            )
        several = len(ranks) > 1
        straggles: dict[str, int] = defaultdict(int)
        if several:
            for _, straggler in slowest.values():
                if straggler is not None:
                    straggles[labels[straggler]] += 1
        for entry in ranks:
            entry["slowest"] = straggles[entry["process"]] if several else None
        by_iteration = any(i >= 0 for steps in self._steps.values() for i in steps.iterations)
        return {"x": "iteration" if by_iteration else "step", "ranks": ranks}


def _series(points: Sequence[tuple[int, int, bool]]) -> dict[str, Any]:
    """Points ``[x, ms, wasted]``, or past :data:`STEP_POINTS`, bins ``[x0, x1, mean, max]``."""
    if len(points) <= STEP_POINTS:
        return {
            "points": [[x, round(d / 1e6, 6), 1 if wasted else 0] for x, d, wasted in points],
            "bins": None,
        }
    counted = [(x, d) for x, d, wasted in points if not wasted]
    size = math.ceil(len(counted) / STEP_POINTS)
    bins = []
    for chunk in _batched(counted, size):
        durations = [d for _, d in chunk]
        bins.append(
            [
                chunk[0][0],
                chunk[-1][0],
                round(sum(durations) / len(durations) / 1e6, 6),
                round(max(durations) / 1e6, 6),
            ]
        )
    return {"points": None, "bins": bins, "bin_size": size}


def _batched(items: Sequence[Any], size: int) -> list[Sequence[Any]]:
    return [items[i : i + size] for i in range(0, len(items), size)]


def _attributes(span: ReportSpan) -> str:
    """The span's attributes for the hover, as compact JSON, long values cut short."""
    shown: dict[str, Any] = {}
    attributes: dict[str, Any] = json.loads(span.attributes) if span.attributes else {}
    for key, value in attributes.items():
        if key in _HIDDEN_ATTRIBUTES:
            continue
        if len(shown) == _ATTRIBUTES_SHOWN:
            shown["…"] = f"{len(attributes) - _ATTRIBUTES_SHOWN} more"
            break
        if isinstance(value, str) and len(value) > _ATTRIBUTE_CHARS:
            value = value[: _ATTRIBUTE_CHARS - 1] + "…"
        elif not isinstance(value, (str, int, float, bool)) and value is not None:
            text = json.dumps(value, ensure_ascii=False)
            value = text if len(text) <= _ATTRIBUTE_CHARS else text[: _ATTRIBUTE_CHARS - 1] + "…"
        shown[key] = value
    if span.status not in ("UNSET", ""):
        shown["status"] = span.status + (
            f": {span.status_description}" if span.status_description else ""
        )
    return json.dumps(shown, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
