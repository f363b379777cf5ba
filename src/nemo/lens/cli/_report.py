"""``nemo-lens report``: one HTML page of a trace's goodput, timeline, step durations and
stragglers (docs/cli.md), computed in the engine: only the page's data reaches Python, a few
thousand rows whatever the trace's size; :mod:`._report_html` renders it."""

from __future__ import annotations

import argparse
import json
import math
import os
import shlex
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Final

from nemo.lens import semconv
from nemo.lens._version import __version__
from nemo.lens.cli._common import (
    EXIT_OK,
    PROG,
    STDIN,
    Process,
    fail,
    output_file,
    plural,
    print_lines,
    with_engine,
    write_output,
)
from nemo.lens.cli._engine import query
from nemo.lens.cli._goodput import (
    RunGoodput,
    goodput_line,
    goodput_runs,
    note_goodput_gaps,
    run_json,
)
from nemo.lens.cli._stragglers import Arrival, arrival_stragglers

if TYPE_CHECKING:
    from nemo.lens.cli._engine import Engine

__all__ = ["STEP_POINTS", "STRAGGLER_ROWS", "ReportBuilder", "Stragglers", "cmd_report"]

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
_HIDDEN_ATTRIBUTES: Final = frozenset({semconv.SPAN_GROUP, semconv.LEGACY_SPAN_GROUP})

_Row = tuple[Process, str]
"""A timeline row: a process and a span group."""


@dataclass(frozen=True)
class _RowFacts:
    spans: int
    first: tuple[int, int]
    """Its first span: (start, -end), so on a tie the enclosing group comes first."""


@dataclass(frozen=True)
class _Drawn:
    row: _Row
    start: int
    end: int
    name: str
    attributes: str


class ReportBuilder:
    """The page's data, from the engine's results (:meth:`from_engine`, then :meth:`data`)."""

    def __init__(
        self,
        runs: list[RunGoodput],
        buckets: Mapping[str, str],
        rows: dict[_Row, _RowFacts],
        end: int,
    ) -> None:
        self.runs = runs
        self.buckets = buckets
        """Group -> the bucket its row shows (goodput groups that name one)."""
        self.rows = rows
        self.spans = sum(facts.spans for facts in rows.values())
        self.origin = min((facts.first[0] for facts in rows.values()), default=0)
        self.end = end
        self.drawn: list[_Drawn] = []
        self.coverage: dict[_Row, list[int]] = {}
        self.lifetimes: dict[Process, list[tuple[int, int]]] = defaultdict(list)
        self.steps = StepSeries()
        self.stragglers = Stragglers()
        self.arrivals: list[Arrival] = []

    @classmethod
    def from_engine(cls, engine: Engine, *, drawn_spans: int = DRAWN_SPANS) -> ReportBuilder:
        """Run the report's queries over *engine*'s spans and keep what the page shows."""
        rows: dict[_Row, _RowFacts] = {}
        end = 0
        for run_id, rank, service, group, spans, first_start, first_end, last_end in engine.rows(
            query("report_rows")
        ):
            rows[(Process(rank, run_id, service), group)] = _RowFacts(
                int(spans), (first_start, -first_end)
            )
            end = max(end, last_end)
        builder = cls(goodput_runs(engine), dict(engine.rows(query("row_buckets"))), rows, end)
        if not rows:
            return builder
        for run_id, rank, service, _, start, stop in engine.rows(query("report_lifetimes")):
            builder.lifetimes[Process(rank, run_id, service)].append((start, stop))
        for run_id, rank, service, group, name, start, stop, *status in engine.rows(
            query("report_drawn"), [drawn_spans]
        ):
            row = (Process(rank, run_id, service), group)
            builder.drawn.append(_Drawn(row, start, stop, name, _attributes(*status)))
        builder._cover(engine)
        builder.steps = fetch_steps(engine, STEP_POINTS)
        builder.stragglers = fetch_stragglers(engine)
        builder.arrivals = arrival_stragglers(engine)
        return builder

    def _order(self) -> tuple[list[Process], list[_Row]]:
        """The processes in rank order, and the rows in display order."""
        processes = sorted({process for process, _ in self.rows}, key=Process.sort_key)
        rank_order = {process: index for index, process in enumerate(processes)}
        order = sorted(
            self.rows,
            key=lambda row: (rank_order[row[0]], self.rows[row].first, row[1]),
        )
        return processes, order

    def _cover(self, engine: Engine) -> None:
        """The coverage strips of the shown rows with spans left undrawn."""
        drawn_in: dict[_Row, int] = defaultdict(int)
        for entry in self.drawn:
            drawn_in[entry.row] += 1
        _, order = self._order()
        needed = [row for row in order[:MAX_ROWS] if self.rows[row].spans > drawn_in[row]]
        if not needed:
            return
        engine.table(
            "report_covered",
            "run_id VARCHAR, rank BIGINT, service VARCHAR, span_group VARCHAR",
            [(p.run_id, p.rank, p.service, group) for p, group in needed],
        )
        width = max(1, self.end - self.origin) / COVERAGE_BINS
        shares: dict[_Row, list[float]] = {row: [0.0] * COVERAGE_BINS for row in needed}
        wholes: dict[_Row, list[int]] = {row: [0] * COVERAGE_BINS for row in needed}
        for run_id, rank, service, group, index, part, whole in engine.rows(
            query("report_coverage"), [self.origin, width, COVERAGE_BINS - 1]
        ):
            row = (Process(rank, run_id, service), group)
            shares[row][index] = part
            wholes[row][index] = int(whole)
        engine.sql("DROP TABLE report_covered")
        for row in needed:
            covered = 0
            strip = []
            for share, whole in zip(shares[row], wholes[row], strict=True):
                covered += whole  # the spans covering this bin whole, summed in bin order
                strip.append(min(255, math.ceil(255 * (share + covered))))
            self.coverage[row] = strip

    def data(self, *, title: str, sources: Sequence[str], generator: str) -> dict[str, Any]:
        """The page's data: a JSON-ready dict (see :mod:`nemo.lens.cli._report_html`)."""
        if not self.spans:
            raise ValueError("no spans to report")
        origin = self.origin
        processes, order = self._order()
        several_runs = len({p.run_id for p in processes}) > 1
        several_services = len({p.service for p in processes}) > 1
        labels = {
            p: (f"{p.service} " if several_services and p.service else "")
            + p.label(with_run=several_runs)
            for p in processes
        }
        shown = order[:MAX_ROWS]
        position = {row: index for index, row in enumerate(shown)}
        rows = [
            {"process": labels[process], "group": group, "bucket": self.buckets.get(group, "")}
            for process, group in shown
        ]

        def ms(ns: int) -> float:
            return round((ns - origin) / 1e6, 6)

        drawn = sorted(
            (entry for entry in self.drawn if entry.row in position),
            key=lambda d: (position[d.row], d.start),
        )
        names: dict[str, int] = {}
        for entry in drawn:
            names.setdefault(entry.name, len(names))
        return {
            "title": title,
            "generator": generator,
            "sources": list(sources),
            "origin_unix_nano": origin,
            "wall_ms": ms(self.end),
            "span_count": self.spans,
            "drawn_count": len(drawn),
            "processes": len(processes),
            "rows_total": len(order),
            "rows": rows,
            "names": list(names),
            "spans": [
                [position[d.row], ms(d.start), round((d.end - d.start) / 1e6, 6), names[d.name]]
                for d in drawn
            ],
            "attributes": [d.attributes for d in drawn],
            "coverage": {str(position[row]): strip for row, strip in self.coverage.items()},
            "coverage_bins": COVERAGE_BINS,
            "restarts": self._restarts(labels, ms),
            "steps": self.steps.ranks(processes, labels),
            "stragglers": self.stragglers.page(with_run=several_runs),
            "arrivals": arrivals_page(self.arrivals, with_run=several_runs),
            "goodput": [run_json(run) for run in self.runs],
        }

    def _restarts(self, labels: Mapping[Process, str], ms: Any) -> list[dict[str, Any]]:
        """The gaps between one lifetime of a rank and its next."""
        gaps = []
        for process in labels:  # ranks in order
            covered_end: int | None = None
            for start, end in sorted(self.lifetimes.get(process, [])):
                if covered_end is not None and start > covered_end:
                    gaps.append(
                        {"process": labels[process], "start": ms(covered_end), "end": ms(start)}
                    )
                covered_end = end if covered_end is None else max(covered_end, end)
        return gaps


def _attributes(status: str, description: str | None, encoded: str | None) -> str:
    """A span's attributes and status for the hover, as compact JSON, long values cut."""
    shown: dict[str, Any] = {}
    attributes: dict[str, Any] = json.loads(encoded) if encoded else {}
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
    if status not in ("UNSET", ""):
        shown["status"] = status + (f": {description}" if description else "")
    return json.dumps(shown, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


# --- step durations ----------------------------------------------------------------------


@dataclass
class StepSeries:
    """Every process's step figures, without labels (see :meth:`ranks`)."""

    stats: dict[Process, dict[str, Any]] = field(default_factory=dict)
    series: dict[Process, dict[str, Any]] = field(default_factory=dict)
    slowest: dict[Process, int] = field(default_factory=dict)
    by_iteration: bool = False

    def ranks(self, processes: Sequence[Process], labels: Mapping[Process, str]) -> dict[str, Any]:
        """The page's ``steps``: processes in order, each labelled."""
        shown = [p for p in processes if p in self.stats]
        several = len(shown) > 1
        ranks = [
            {
                "process": labels[process],
                **self.stats[process],
                **self.series[process],
                "slowest": self.slowest.get(process, 0) if several else None,
            }
            for process in shown
        ]
        return {"x": "iteration" if self.by_iteration else "step", "ranks": ranks}


def fetch_steps(engine: Engine, step_points: int) -> StepSeries:
    """Gather the step spans in the engine and fetch what the chart and table show."""
    engine.sql(f"CREATE OR REPLACE TEMP TABLE report_steps AS {query('report_steps')}")
    steps = StepSeries()
    for run_id, rank, service, count, wasted, median, p90, longest, iterations in engine.rows(
        query("report_step_stats")
    ):
        process = Process(rank, run_id, service)
        steps.stats[process] = {
            "count": int(count),
            "wasted": int(wasted),
            "median_ms": None if median is None else median / 1e6,
            "p90_ms": None if p90 is None else p90 / 1e6,
            "max_ms": None if longest is None else longest / 1e6,
        }
        steps.series[process] = (
            {"points": [], "bins": None}
            if count <= step_points
            else {"points": None, "bins": [], "bin_size": 0}
        )
        steps.by_iteration = steps.by_iteration or bool(iterations)
    for run_id, rank, service, x, duration, wasted in engine.rows(
        query("report_step_points"), [step_points]
    ):
        series = steps.series[Process(rank, run_id, service)]
        series["points"].append([x, round(duration / 1e6, 6), 1 if wasted else 0])
    for run_id, rank, service, _, first, last, total, count, longest, size in engine.rows(
        query("report_step_bins"), [step_points, step_points]
    ):
        series = steps.series[Process(rank, run_id, service)]
        series["bin_size"] = size
        series["bins"].append(
            [first, last, round(int(total) / count / 1e6, 6), round(longest / 1e6, 6)]
        )
    for run_id, rank, service, times in engine.rows(query("report_step_slowest")):
        steps.slowest[Process(rank, run_id, service)] = int(times)
    engine.sql("DROP TABLE report_steps")
    return steps


# --- stragglers ----------------------------------------------------------------------

STRAGGLER_ROWS: Final = 20
"""Iterations the table shows at most: those with the largest lag."""


@dataclass
class Stragglers:
    """The straggler query's first rows with a lag (the worst first), and the counts."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    iterations: int = 0
    """Iterations at least two ranks executed (the query's rows)."""
    lagging: int = 0
    """Of those, the iterations whose slowest rank lagged the median rank."""
    cap: int = STRAGGLER_ROWS

    def page(self, *, with_run: bool) -> dict[str, Any]:
        """The page's ``stragglers``: rows labelled as the other sections label ranks."""
        rows = [
            {"process": Process(row["rank"], row["run_id"], "").label(with_run=with_run)}
            | {key: value for key, value in row.items() if key != "run_id"}
            for row in self.rows
        ]
        return {
            "iterations": self.iterations,
            "lagging": self.lagging,
            "cap": self.cap,
            "rows": rows,
        }

    def summary(self) -> str | None:
        """One line for the terminal: the worst lag, and how many iterations had one."""
        if not self.rows:
            return None
        worst = self.rows[0]
        return (
            f"stragglers: {self.lagging} of {self.iterations} iterations had a rank slower "
            f"than the median; the worst, {Process(worst['rank'], worst['run_id'], '').label()} "
            f"at iteration {worst['iteration']}, {worst['lag_ns'] / 1e6:.3f} ms over the median "
            "rank"
        )


def arrivals_page(rows: Sequence[Arrival], *, with_run: bool) -> dict[str, Any]:
    """The page's ``arrivals``: the ranks ever last at a sync point, the worst score first
    (at most :data:`STRAGGLER_ROWS`), and how many ranks and groups were compared."""
    late = [row for row in rows if row.times_last]
    return {
        "compared": len(rows),
        "late": len(late),
        "cap": STRAGGLER_ROWS,
        "rows": [
            {"process": Process(row.rank, row.run_id, "").label(with_run=with_run)}
            | {key: value for key, value in asdict(row).items() if key != "run_id"}
            for row in late[:STRAGGLER_ROWS]
        ],
    }


def fetch_stragglers(engine: Engine, cap: int | None = None) -> Stragglers:
    """Run the packaged straggler query and keep its first *cap* rows that show a lag
    (:data:`STRAGGLER_ROWS` unless given): those rows come first, the worst lag first."""
    text = query("stragglers")
    found = Stragglers(cap=STRAGGLER_ROWS if cap is None else cap)
    (found.iterations, found.lagging), *_ = engine.rows(
        f"SELECT count(*), count(CASE WHEN lag_ns > 0 THEN 1 END) FROM ({text}) AS stragglers"
    )
    keys = ("run_id", "iteration", "rank", "slowest_ns", "median_ns", "lag_ns", "ranks")
    if found.lagging:
        rows = engine.sql(text).fetchmany(min(found.cap, found.lagging))
        found.rows = [dict(zip(keys, row, strict=True)) for row in rows]
    return found


def cmd_report(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from nemo.lens.cli._report_html import render_report

    output = output_file(args, parser, ".html", "name the report file with -o OUT")
    if output == STDIN:
        parser.error("-o -: the report is a file to open in a browser; name a file")
    directory = os.path.dirname(output) or "."
    if not os.path.isdir(directory):
        # Said before a long read, not after it.
        return fail(
            f"{output}: cannot be written: no directory {directory}",
            f"create it (mkdir -p {shlex.quote(directory)}) or name another output with -o",
        )
    title = args.title or f"nemo.lens report: {os.path.basename(args.traces[0])}" + (
        f" and {plural(len(args.traces) - 1, 'more input')}" if len(args.traces) > 1 else ""
    )

    def work(engine: Engine) -> int:
        builder = ReportBuilder.from_engine(engine)
        note_goodput_gaps(builder.runs, args.iteration_attribute)
        data = builder.data(title=title, sources=args.traces, generator=f"{PROG} {__version__}")
        page = render_report(data)
        try:
            write_output(output, lambda stream: stream.write(page))
        except OSError as exc:
            return fail(f"{output}: cannot be written: {exc.strerror or exc}")
        drawn, spans = data["drawn_count"], data["span_count"]
        shown = f"{spans} spans" + (f", the {drawn} longest drawn as bars" if drawn < spans else "")
        several = len(builder.runs) > 1
        print_lines(
            [(f"run {run.run_id}: " if several else "") + goodput_line(run) for run in builder.runs]
            + ([summary] if (summary := builder.stragglers.summary()) else [])
            + [f"wrote {output}: {shown}; open it in a browser (it needs no network)"]
        )
        return EXIT_OK

    return with_engine(args, work, iteration_attribute=args.iteration_attribute, detail=True)
