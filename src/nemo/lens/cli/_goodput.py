"""Goodput from traces: how much of a run trained the model, and where the rest went.

Each rank's spans are accounted over the run's wall time, from the first span's
start to the last span's end. Every instant goes to exactly one bucket:

``productive``
    inside a ``step`` span (a group whose schema bucket is ``productive``) that
    finished and whose iteration was not executed again later: the last
    execution of an iteration is the one that counts;
``wasted_progress``
    inside a step span whose iteration was executed again later (a crash lost
    it), or that never finished: truncated (``nemo.span.truncated``), by a
    shutdown or by the reader for a process that died in it;
``initialization``, ``checkpoint_save``, ``evaluation``
    inside a span of a goodput group feeding that bucket (``model_init``,
    ``load_checkpoint``, ``checkpoint``, ``evaluate``, consumers' set-up groups);
``restart``
    between the end of one process lifetime and the start of the next;
``unaccounted``
    everything else (a lifetime's time outside every bucketed span).

Where bucketed spans overlap, the most specific wins: the innermost one, i.e. the
covering span that started last (a checkpoint inside a step is checkpoint time).
Spans of groups that feed no bucket (profiling detail, ``job``) are transparent.
All arithmetic is in integer nanoseconds, so the buckets add up to the wall time
exactly. For the run as a whole, the slowest rank (the least productive time)
bounds it: the run's figures are that rank's, over the run's wall time. Only
ranks that executed a step are candidates: a process of the run that trains
nothing (a launcher, a scheduler's spans emitted afterwards) widens the run's
wall time but would otherwise bound every run at zero.

The accounting is SQL over the engine's ``spans`` and ``span_groups`` views
(``queries/goodput.sql``: boundary points per rank, the pieces between them, the
covering span that started last, sums per bucket); this module turns its rows
into :class:`RunGoodput` s.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

from nemo.lens.cli._engine import query

if TYPE_CHECKING:
    from nemo.lens.cli._engine import Engine

__all__ = [
    "BADPUT_BUCKETS",
    "BUCKETS",
    "Breakdown",
    "RunGoodput",
    "goodput_notes",
    "goodput_runs",
]

PRODUCTIVE: Final = "productive"
WASTED: Final = "wasted_progress"
RESTART: Final = "restart"
UNACCOUNTED: Final = "unaccounted"
SCHEMA_BADPUT: Final = ("initialization", "checkpoint_save", "evaluation")
BADPUT_BUCKETS: Final[tuple[str, ...]] = (*SCHEMA_BADPUT, WASTED, RESTART, UNACCOUNTED)
"""The badput buckets, in the order reports show them."""
BUCKETS: Final[tuple[str, ...]] = (PRODUCTIVE, *BADPUT_BUCKETS)


@dataclass
class Breakdown:
    """One rank's (or the run's) accounting, in nanoseconds."""

    start_ns: int
    end_ns: int
    buckets: dict[str, int] = field(default_factory=lambda: dict.fromkeys(BUCKETS, 0))
    lifetimes: int = 0
    """How many process lifetimes the figures cover (a crash and resume: two)."""

    @property
    def wall_ns(self) -> int:
        return self.end_ns - self.start_ns

    @property
    def goodput(self) -> float:
        return self.buckets[PRODUCTIVE] / self.wall_ns if self.wall_ns > 0 else 0.0

    def as_dict(self) -> dict[str, object]:
        """The figures in seconds, keyed as ``nemo-lens goodput --json`` prints them."""
        return {
            "wall_s": self.wall_ns / 1e9,
            "productive_s": self.buckets[PRODUCTIVE] / 1e9,
            "goodput": self.goodput,
            "badput": {name: self.buckets[name] / 1e9 for name in BADPUT_BUCKETS},
        }


@dataclass
class RunGoodput:
    """A run's figures: the bounding rank's over the run's wall time, and every rank's."""

    run_id: str
    run: Breakdown
    bounding_rank: int | None
    ranks: dict[int | None, Breakdown]


def goodput_runs(engine: Engine) -> list[RunGoodput]:
    """Every run's figures, runs in name order (``queries/goodput.sql``)."""
    runs: dict[str, RunGoodput] = {}
    for row in engine.rows(query("goodput")):
        run_id, rank, lifetimes, start, end = row[:5]
        counts = [int(value) for value in row[5:12]]
        run_start, run_end, bounding = row[12:]
        breakdown = Breakdown(int(start), int(end), dict(zip(_COLUMNS, counts, strict=True)))
        breakdown.lifetimes = int(lifetimes)
        found = runs.get(run_id)
        if found is None:
            found = runs[run_id] = RunGoodput(run_id, Breakdown(run_start, run_end), None, {})
        found.ranks[rank] = breakdown
        if bounding:
            found.bounding_rank = rank
            run = found.run
            run.buckets = dict(breakdown.buckets)
            run.lifetimes = breakdown.lifetimes
            # The run is longer than the bounding rank's own span of time where other
            # ranks started earlier or ended later: nothing of the bounding rank's ran
            # then, so that time is unaccounted for the run.
            run.buckets[UNACCOUNTED] += run.wall_ns - breakdown.wall_ns
    return [runs[run_id] for run_id in sorted(runs)]


def goodput_notes(engine: Engine) -> tuple[int, int]:
    """How many step spans the trace holds, and how many of them carry no iteration."""
    steps, without = engine.rows(query("goodput_notes"))[0]
    return int(steps or 0), int(without or 0)


# The order of the bucket columns in queries/goodput.sql.
_COLUMNS: Final = (PRODUCTIVE, *SCHEMA_BADPUT, WASTED, RESTART, UNACCOUNTED)
