"""``nemo-lens goodput``: where a run's time went (docs/goodput.md), from ``queries/goodput.sql``,
as a table per run or one JSON object per run."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from nemo.lens._vocabulary import (
    ANOMALOUS,
    PRODUCTIVE,
    RECOVERY,
    RESTART,
    STARTUP,
    UNACCOUNTED,
    WASTED,
)
from nemo.lens.cli._common import (
    EXIT_OK,
    PROG,
    Process,
    print_json_lines,
    print_lines,
    with_engine,
)
from nemo.lens.cli._engine import query
from nemo.lens.cli._table import format_table, seconds, share

if TYPE_CHECKING:
    from nemo.lens.cli._engine import Engine

__all__ = ["BADPUT_BUCKETS", "BUCKETS", "Breakdown", "RunGoodput", "StepFigures", "cmd_goodput"]
__all__ += ["goodput_line", "goodput_runs", "note_goodput_gaps", "rank_label", "run_json"]
__all__ += ["run_name"]

SCHEMA_BADPUT: Final = ("initialization", "checkpoint_save", "evaluation", "data_loading")
BADPUT_BUCKETS: Final[tuple[str, ...]] = (
    *SCHEMA_BADPUT,
    STARTUP,
    RECOVERY,
    ANOMALOUS,
    WASTED,
    RESTART,
    UNACCOUNTED,
)
"""The badput buckets, in the order reports show them."""
BUCKETS: Final[tuple[str, ...]] = (PRODUCTIVE, *BADPUT_BUCKETS)
"""Every bucket, in the order reports show them."""
_SQL_BUCKETS: Final = (PRODUCTIVE, "initialization", "checkpoint_save", "evaluation", WASTED)
_SQL_BUCKETS_AFTER: Final = (RESTART, UNACCOUNTED)
_SQL_BUCKETS_ADDED: Final = ("data_loading", STARTUP, RECOVERY, ANOMALOUS)
"""``queries/goodput.sql``'s bucket columns: its first ones, and those added since."""


@dataclass(frozen=True)
class StepFigures:
    """A rank's counted steps (finished, not executed again) by Google's anomaly rule."""

    counted: int
    anomalous: int
    """Steps slower than median + 3 * MAD: their excess over the ideal is badput."""
    ideal_ns: float | None
    """The mean of the steps that are not anomalous; ``None`` without a counted step."""
    deviation_ns: float | None
    """The step deviation (docs/goodput.md); ``None`` without a counted step."""

    def as_dict(self) -> dict[str, object]:
        def in_seconds(ns: float | None) -> float | None:
            # Whole nanoseconds: engines sum doubles in different orders.
            return None if ns is None else round(ns) / 1e9

        return {
            "counted": self.counted,
            "anomalous": self.anomalous,
            "ideal_s": in_seconds(self.ideal_ns),
            "deviation_s": in_seconds(self.deviation_ns),
        }


@dataclass
class Breakdown:
    """One rank's (or the run's) accounting, in nanoseconds."""

    start_ns: int
    end_ns: int
    buckets: dict[str, int] = field(default_factory=lambda: dict.fromkeys(BUCKETS, 0))
    lifetimes: int = 0
    """How many process lifetimes the figures cover (a crash and resume: two)."""
    steps: StepFigures = field(default_factory=lambda: StepFigures(0, 0, None, None))

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
    step_spans: int = 0
    """The run's step spans, finished or not (the notes: none at all is worth saying)."""
    steps_without_iteration: int = 0
    """Of those, the ones without an iteration (a re-executed iteration cannot be told)."""


def goodput_runs(engine: Engine) -> list[RunGoodput]:
    """Every run's figures, runs in name order (``queries/goodput.sql``)."""
    runs: dict[str, RunGoodput] = {}
    for row in _separate_reads(engine, query("goodput")):
        run_id, rank, lifetimes, start, end = row[:5]
        counts = [int(value) for value in (*row[5:12], *row[15:19])]
        run_start, run_end, bounding = row[12:15]
        steps, anomalous, ideal, deviation, step_spans, without_iteration = row[19:]
        names = (*_SQL_BUCKETS, *_SQL_BUCKETS_AFTER, *_SQL_BUCKETS_ADDED)
        found_buckets = dict(zip(names, counts, strict=True))
        buckets = {name: found_buckets[name] for name in BUCKETS}
        figures = StepFigures(int(steps), int(anomalous), ideal, deviation)
        breakdown = Breakdown(int(start), int(end), buckets, int(lifetimes), figures)
        found = runs.get(run_id)
        if found is None:
            found = runs[run_id] = RunGoodput(run_id, Breakdown(run_start, run_end), None, {})
        found.ranks[rank] = breakdown
        found.step_spans += int(step_spans)
        found.steps_without_iteration += int(without_iteration)
        if bounding:
            found.bounding_rank = rank
            run = found.run
            run.buckets = dict(breakdown.buckets)
            run.lifetimes = breakdown.lifetimes
            run.steps = breakdown.steps
            # Where other ranks started earlier or ended later than the bounding rank,
            # nothing of the bounding rank's ran: that time is unaccounted for the run.
            run.buckets[UNACCOUNTED] += run.wall_ns - breakdown.wall_ns
    return [runs[run_id] for run_id in sorted(runs)]


def _separate_reads(engine: Engine, text: str) -> list[tuple[Any, ...]]:
    """The rows of *text*, DuckDB's common-subplan optimiser off: it stores the spans that
    the query's two passes read, which costs more than reading them twice (goodput over
    10**6 spans of JSON lines: 1.62 s -> 1.48 s; over Parquet, no change). A DuckDB
    without that optimiser runs the query as it is."""
    names = {row[0] for row in engine.rows("SELECT name FROM duckdb_optimizers()")}
    if "common_subplan" not in names:
        return engine.rows(text)
    engine.sql("SET disabled_optimizers = 'common_subplan'")
    try:
        return engine.rows(text)
    finally:
        engine.sql("RESET disabled_optimizers")


def run_json(run: RunGoodput) -> dict[str, Any]:
    """The run's figures, then every rank's: ``wall_s``, ``productive_s``, ``goodput``,
    ``badput`` (seconds by bucket), ``lifetimes``, ``steps``; ``run_id``, ``bounding_rank``,
    ``ranks``."""

    def figures(breakdown: Breakdown) -> dict[str, Any]:
        return {
            **breakdown.as_dict(),
            "lifetimes": breakdown.lifetimes,
            "steps": breakdown.steps.as_dict(),
        }

    return {
        "run_id": run.run_id,
        **figures(run.run),
        "bounding_rank": run.bounding_rank,
        "ranks": [{"rank": rank, **figures(b)} for rank, b in run.ranks.items()],
    }


def _seconds(nanoseconds: int) -> str:
    return seconds(nanoseconds / 1e9)


def rank_label(rank: int | None) -> str:
    return Process(rank, "", "").label()


def run_name(run_id: str) -> str:
    return f"run {run_id}" if run_id else "run (no nemo.run.id)"


def goodput_line(run: RunGoodput, detail: str | None = None) -> str:
    """The goodput and what it is of; then the badput that is not zero, or, given *detail*,
    that in parentheses instead (the table's heading)."""
    figures = run.run
    productive = figures.buckets[PRODUCTIVE]
    figure = f"goodput {share(productive, figures.wall_ns)}"
    of = f"{_seconds(productive)} productive of {_seconds(figures.wall_ns)} wall"
    if detail is not None:
        return f"{figure} ({of}{detail})"
    badput = [f"{b} {_seconds(figures.buckets[b])}" for b in BADPUT_BUCKETS if figures.buckets[b]]
    return f"{figure}: {of}" + (f"; badput: {', '.join(badput)}" if badput else "")


def format_goodput(runs: Sequence[RunGoodput]) -> list[str]:
    """Per run: a heading with the goodput, the run's buckets, and a row per rank."""
    lines: list[str] = []
    for run in runs:
        figures = run.run
        if lines:
            lines.append("")
        ranks = len(run.ranks)
        bound = (
            f"; {rank_label(run.bounding_rank)}, the slowest of {ranks}, bounds it"
            if ranks > 1
            else ""
        )
        lifetimes = f"; {figures.lifetimes} lifetimes" if figures.lifetimes > 1 else ""
        lines.append(f"{run_name(run.run_id)}: {goodput_line(run, bound + lifetimes)}")
        rows = [
            (name, _seconds(figures.buckets[name]), share(figures.buckets[name], figures.wall_ns))
            for name in BUCKETS
        ]
        rows.append(("wall", _seconds(figures.wall_ns), share(figures.wall_ns, figures.wall_ns)))
        lines += format_table(("bucket", "time", "share"), rows, ("<", ">", ">"), indent="  ")
        lines.append(f"  {_steps_line(figures.steps)}")
        if ranks > 1 or figures.lifetimes > 1:
            lines.append("")
            headers = ("rank", "lifetimes", "wall", "goodput", *BUCKETS, "ideal step", "deviation")
            rank_rows = [
                (
                    rank_label(rank),
                    str(b.lifetimes),
                    _seconds(b.wall_ns),
                    share(b.buckets[PRODUCTIVE], b.wall_ns),
                    *(_seconds(b.buckets[name]) for name in BUCKETS),
                    _maybe_seconds(b.steps.ideal_ns),
                    _maybe_seconds(b.steps.deviation_ns),
                )
                for rank, b in run.ranks.items()
            ]
            align = ("<", *(">",) * (len(headers) - 1))
            lines += format_table(headers, rank_rows, align, indent="  ")  # type: ignore[arg-type]
    return lines


def _maybe_seconds(nanoseconds: float | None) -> str:
    return "-" if nanoseconds is None else seconds(nanoseconds / 1e9)


def _steps_line(steps: StepFigures) -> str:
    if not steps.counted:
        return "steps: none counted"
    return (
        f"steps: {steps.counted} counted, {steps.anomalous} anomalous; "
        f"ideal step time {_maybe_seconds(steps.ideal_ns)}, "
        f"step deviation {_maybe_seconds(steps.deviation_ns)}"
    )


def note_goodput_gaps(runs: Sequence[RunGoodput], iteration_attribute: str) -> None:
    """Say on stderr what makes the figures less than they could be, and the fix."""
    steps = sum(run.step_spans for run in runs)
    without_iteration = sum(run.steps_without_iteration for run in runs)
    if not steps:
        print(
            f"{PROG}: note: no step span in the trace, so nothing counts as productive; "
            "record the step group (NEMO_LENS_SPAN_GROUPS=per_step)",
            file=sys.stderr,
        )
    elif without_iteration:
        print(
            f"{PROG}: note: {without_iteration} of {steps} step spans carry no whole-number "
            f"{iteration_attribute!r} attribute; their time counts as productive, since a "
            "re-executed iteration cannot be told (name the attribute with "
            "--iteration-attribute)",
            file=sys.stderr,
        )


def cmd_goodput(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    def work(engine: Engine) -> int:
        runs = goodput_runs(engine)
        note_goodput_gaps(runs, args.iteration_attribute)
        if args.json:
            print_json_lines(run_json(run) for run in runs)
        else:
            print_lines(format_goodput(runs))
        return EXIT_OK

    return with_engine(args, work, iteration_attribute=args.iteration_attribute, labels=False)
