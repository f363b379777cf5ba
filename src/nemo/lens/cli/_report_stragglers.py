"""The report's straggler table: the packaged straggler query, run as ``nemo-lens sql`` runs it.

``queries/stragglers.sql`` gives, per iteration that at least two ranks executed,
the slowest rank, its step's duration, the median rank's and the lag between
them, the worst lag first. The report runs that very text (over the ``steps``
view, made here when the engine has none yet) and keeps the first
:data:`STRAGGLER_ROWS` rows that show a lag, so the page's figures are the ones
``nemo-lens sql "$(cat stragglers.sql)" TRACE`` prints; a second query over the
same text counts the iterations, for the page to say how many it left out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from nemo.lens.cli._common import Process

if TYPE_CHECKING:
    from nemo.lens.cli._engine import Engine

__all__ = ["STRAGGLER_ROWS", "Straggler", "Stragglers", "fetch_stragglers"]

STRAGGLER_ROWS: Final = 20
"""Iterations the table shows at most: those with the largest lag."""


@dataclass(frozen=True)
class Straggler:
    """One row of the straggler query."""

    run_id: str
    iteration: int
    rank: int | None
    slowest_ns: int
    median_ns: int
    lag_ns: int
    ranks: int


@dataclass
class Stragglers:
    """The rows the page shows and the counts it states."""

    rows: list[Straggler] = field(default_factory=list)
    iterations: int = 0
    """Iterations at least two ranks executed (the query's rows)."""
    lagging: int = 0
    """Of those, the iterations whose slowest rank lagged the median rank."""
    cap: int = STRAGGLER_ROWS

    def page(self, *, with_run: bool) -> dict[str, Any]:
        """The page's ``stragglers``: rows labelled as the other sections label ranks."""
        return {
            "iterations": self.iterations,
            "lagging": self.lagging,
            "cap": self.cap,
            "rows": [
                {
                    "process": Process(row.rank, row.run_id, "").label(with_run=with_run),
                    "rank": row.rank,
                    "iteration": row.iteration,
                    "slowest_ns": row.slowest_ns,
                    "median_ns": row.median_ns,
                    "lag_ns": row.lag_ns,
                    "ranks": row.ranks,
                }
                for row in self.rows
            ],
        }

    def summary(self) -> str | None:
        """One line for the terminal: the worst lag, and how many iterations had one."""
        if not self.rows:
            return None
        worst = self.rows[0]
        return (
            f"stragglers: {self.lagging} of {self.iterations} iterations had a rank slower "
            f"than the median; the worst, {Process(worst.rank, worst.run_id, '').label()} at "
            f"iteration {worst.iteration}, {worst.lag_ns / 1e6:.3f} ms over the median rank"
        )


def fetch_stragglers(engine: Engine, cap: int | None = None) -> Stragglers:
    """Run the packaged straggler query and keep its first *cap* rows that show a lag
    (:data:`STRAGGLER_ROWS` unless given)."""
    from nemo.lens.cli._engine import query

    cap = STRAGGLER_ROWS if cap is None else cap
    text = query("stragglers")
    found = Stragglers(cap=cap)
    (found.iterations, found.lagging), *_ = engine.rows(
        f"SELECT count(*), count(CASE WHEN lag_ns > 0 THEN 1 END) FROM ({text}) AS stragglers"
    )
    if not found.lagging:
        return found
    # The worst lag first: the rows with a lag come before every row without one.
    for run_id, iteration, rank, slowest, median, lag, ranks in engine.sql(text).fetchmany(
        min(cap, found.lagging)
    ):
        found.rows.append(
            Straggler(
                "" if run_id is None else str(run_id),
                int(iteration),
                rank,
                slowest,
                median,
                lag,
                int(ranks),
            )
        )
    return found
