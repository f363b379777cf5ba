"""What ``nemo-lens report`` shows, computed in the engine: only the page's data reaches Python.

Three views, each a few queries over the engine's ``spans`` view (``queries/report_*.sql``):

Timeline
    One row per rank and span group (ranks in order, a rank's groups in the
    order they first fired). The :data:`DRAWN_SPANS` longest spans (on a tie of
    durations the earlier start, then the longer-running, then the name) are
    drawn as bars that show name, duration and attributes on hover. What is not
    drawn as a bar still counts: each row with spans left undrawn carries a
    coverage strip of :data:`COVERAGE_BINS` bins, the share of each bin its
    spans cover, drawn behind the bars. The page says how many spans were drawn
    of how many. Restarts (the gaps between one process lifetime and the next)
    are marked.
Step durations
    Every step span (a group feeding the ``productive`` bucket) with its
    iteration and duration, per rank; an execution whose iteration ran again
    later, or that never finished (truncated), is marked as wasted. Past
    :data:`STEP_POINTS` steps a rank's series is reduced to that many bins of
    consecutive iterations (mean and maximum each). A table per rank gives the
    median, 90th percentile and maximum, and how often the rank was the slowest
    at an iteration: the straggler (:mod:`nemo.lens.cli._report_steps`).
Stragglers
    The iterations with the largest lag of the slowest rank over the median
    rank, as the packaged straggler query gives them
    (:mod:`nemo.lens.cli._report_stragglers`).
Goodput
    The figures of :mod:`nemo.lens.cli._goodput` (the engine's) for every run and rank.

:meth:`ReportBuilder.from_engine` runs the queries and keeps their results (a few
thousand rows whatever the trace's size); :meth:`ReportBuilder.data` returns the
page's data, a JSON-ready dict that :mod:`nemo.lens.cli._report_html` renders.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from nemo.lens import semconv
from nemo.lens.cli._common import Process
from nemo.lens.cli._goodput import RunGoodput
from nemo.lens.cli._goodput_format import run_json
from nemo.lens.cli._report_steps import StepSeries, fetch_steps
from nemo.lens.cli._report_stragglers import Stragglers, fetch_stragglers

if TYPE_CHECKING:
    from collections.abc import Sequence

    from nemo.lens.cli._engine import Engine

__all__ = ["COVERAGE_BINS", "DRAWN_SPANS", "STEP_POINTS", "ReportBuilder"]

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
    """A span drawn as a bar."""

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
        """Every run's goodput (from the engine)."""
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

    @classmethod
    def from_engine(cls, engine: Engine, *, drawn_spans: int = DRAWN_SPANS) -> ReportBuilder:
        """Run the report's queries over *engine*'s spans and keep what the page shows."""
        from nemo.lens.cli._engine import query
        from nemo.lens.cli._goodput import goodput_runs

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
        from nemo.lens.cli._engine import query

        drawn_in: dict[_Row, int] = defaultdict(int)
        for entry in self.drawn:
            drawn_in[entry.row] += 1
        _, order = self._order()
        needed = [row for row in order[:MAX_ROWS] if self.rows[row].spans > drawn_in[row]]
        if not needed:
            return
        engine.sql(
            "CREATE OR REPLACE TEMP TABLE report_covered "
            "(run_id VARCHAR, rank BIGINT, service VARCHAR, span_group VARCHAR)"
        )
        engine.connection.executemany(
            "INSERT INTO report_covered VALUES (?, ?, ?, ?)",
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
    """A span's attributes (*encoded*, JSON) and status for the hover, as compact JSON, long
    values cut short."""
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
