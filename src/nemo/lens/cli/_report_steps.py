"""The report's step durations, computed in the engine over ``queries/report_steps.sql``.

The step spans are gathered once into a temporary table (``report_steps``); per
process (run, rank, service) the queries below give the counts and percentiles,
the plotted points (up to ``step_points`` steps) or, past that, bins of
consecutive iterations (mean and maximum), and at how many iterations the
process was the one slowest (a tie counts for nobody). Only these results reach
Python: a few thousand rows per process, whatever the trace's size.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from nemo.lens.cli._common import Process
from nemo.lens.cli._engine._dialect import DUCKDB

if TYPE_CHECKING:
    from nemo.lens.cli._engine import Engine

__all__ = ["StepSeries", "fetch_steps"]

_TABLE: Final = "report_steps"

_COUNTED: Final = "CASE WHEN wasted THEN NULL ELSE duration_ns END"
_STATS: Final = f"""
SELECT run_id, rank, service, count(*),
       sum(CASE WHEN wasted THEN 1 ELSE 0 END),
       {DUCKDB.percentile}({_COUNTED}, 0.5), {DUCKDB.percentile}({_COUNTED}, 0.9),
       max({_COUNTED}), count(iteration)
FROM {_TABLE} GROUP BY run_id, rank, service
"""

_POINTS: Final = f"""
SELECT run_id, rank, service, x, duration_ns, wasted FROM {_TABLE} WHERE steps <= ?
ORDER BY run_id, rank, service, x, duration_ns, wasted
"""

# A bin holds `size` consecutive counted steps in (x, duration) order; `size` is the
# least that keeps the bins within the limit, as ceil(n / limit) in floating point.
_BINS: Final = f"""
WITH counted AS (
  SELECT run_id, rank, service, x, duration_ns,
         row_number() OVER (PARTITION BY run_id, rank, service ORDER BY x, duration_ns) - 1
           AS position,
         count(*) OVER (PARTITION BY run_id, rank, service) AS n
  FROM {_TABLE} WHERE steps > ? AND NOT wasted
),
sized AS (
  SELECT *, CAST(ceil(CAST(n AS DOUBLE) / ?) AS BIGINT) AS size FROM counted
)
SELECT run_id, rank, service, CAST(floor(position / size) AS BIGINT) AS bin, min(x), max(x),
       sum(duration_ns), count(*), max(duration_ns), size
FROM sized
GROUP BY run_id, rank, service, CAST(floor(position / size) AS BIGINT), size
ORDER BY run_id, rank, service, bin
"""

_SLOWEST: Final = f"""
WITH longest AS (
  SELECT x, max(duration_ns) AS duration_ns FROM {_TABLE} WHERE NOT wasted GROUP BY x
),
at_longest AS (
  SELECT s.x, s.run_id, s.rank, s.service
  FROM {_TABLE} s JOIN longest l ON l.x = s.x AND l.duration_ns = s.duration_ns
  WHERE NOT s.wasted
  GROUP BY s.x, s.run_id, s.rank, s.service
),
alone AS (
  SELECT x, min(run_id) AS run_id, min(rank) AS rank, min(service) AS service
  FROM at_longest GROUP BY x HAVING count(*) = 1
)
SELECT run_id, rank, service, count(*) FROM alone GROUP BY run_id, rank, service
"""


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
    from nemo.lens.cli._engine import query

    engine.sql(f"CREATE OR REPLACE TEMP TABLE {_TABLE} AS {query('report_steps')}")
    steps = StepSeries()
    for run_id, rank, service, count, wasted, median, p90, longest, iterations in engine.rows(
        _STATS
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
    for run_id, rank, service, x, duration, wasted in engine.rows(_POINTS, [step_points]):
        series = steps.series[Process(rank, run_id, service)]
        series["points"].append([x, round(duration / 1e6, 6), 1 if wasted else 0])
    for run_id, rank, service, _, first, last, total, count, longest, size in engine.rows(
        _BINS, [step_points, step_points]
    ):
        series = steps.series[Process(rank, run_id, service)]
        series["bin_size"] = size
        series["bins"].append(
            [first, last, round(int(total) / count / 1e6, 6), round(longest / 1e6, 6)]
        )
    for run_id, rank, service, times in engine.rows(_SLOWEST):
        steps.slowest[Process(rank, run_id, service)] = int(times)
    engine.sql(f"DROP TABLE {_TABLE}")
    return steps
