"""What ``nemo-lens goodput`` prints: a table per run, or one JSON object per run.

The JSON object of a run has the keys the issue fixes -- ``wall_s``,
``productive_s``, ``goodput``, ``badput`` (``initialization``,
``checkpoint_save``, ``evaluation``, ``wasted_progress``, ``restart``,
``unaccounted``) -- plus ``run_id``, ``bounding_rank``, ``lifetimes`` and
``ranks``, a list of the same figures for every rank. Seconds are floats of
the exact nanosecond sums, so ``productive_s`` and the badput add up to
``wall_s`` up to a float's rounding.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from nemo.lens.cli._goodput import BADPUT_BUCKETS, BUCKETS, PRODUCTIVE, Breakdown, RunGoodput
from nemo.lens.cli._table import format_table

__all__ = ["format_goodput", "goodput_line", "rank_label", "run_json"]


def rank_label(rank: int | None) -> str:
    """``rank 3``, or ``unknown rank`` for spans without ``dl.rank`` (or ``nemo.rank``)."""
    return "unknown rank" if rank is None else f"rank {rank}"


def _figures(breakdown: Breakdown) -> dict[str, Any]:
    return {**breakdown.as_dict(), "lifetimes": breakdown.lifetimes}


def run_json(run: RunGoodput) -> dict[str, Any]:
    """The run's figures, then every rank's (see the module docstring)."""
    return {
        "run_id": run.run_id,
        **_figures(run.run),
        "bounding_rank": run.bounding_rank,
        "ranks": [{"rank": rank, **_figures(b)} for rank, b in run.ranks.items()],
    }


def _seconds(nanoseconds: int) -> str:
    return f"{nanoseconds / 1e9:.3f} s"


def _share(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole > 0 else "-"


def _run_name(run_id: str) -> str:
    return f"run {run_id}" if run_id else "run (no nemo.run.id)"


def goodput_line(run: RunGoodput) -> str:
    """One line: the goodput, what it is of, and the badput that is not zero."""
    figures = run.run
    badput = [
        f"{name} {_seconds(figures.buckets[name])}"
        for name in BADPUT_BUCKETS
        if figures.buckets[name]
    ]
    return (
        f"goodput {_share(figures.buckets[PRODUCTIVE], figures.wall_ns)}: "
        f"{_seconds(figures.buckets[PRODUCTIVE])} productive of {_seconds(figures.wall_ns)} wall"
        + (f"; badput: {', '.join(badput)}" if badput else "")
    )


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
        productive = figures.buckets[PRODUCTIVE]
        lines.append(
            f"{_run_name(run.run_id)}: goodput {_share(productive, figures.wall_ns)}"
            f" ({_seconds(productive)} productive of "
            f"{_seconds(figures.wall_ns)} wall{bound}{lifetimes})"
        )
        rows = [
            (name, _seconds(figures.buckets[name]), _share(figures.buckets[name], figures.wall_ns))
            for name in BUCKETS
        ]
        rows.append(("wall", _seconds(figures.wall_ns), _share(figures.wall_ns, figures.wall_ns)))
        lines += format_table(("bucket", "time", "share"), rows, ("<", ">", ">"), indent="  ")
        if ranks > 1 or figures.lifetimes > 1:
            lines.append("")
            headers = ("rank", "lifetimes", "wall", "goodput", *BUCKETS)
            rank_rows = [
                (
                    rank_label(rank),
                    str(b.lifetimes),
                    _seconds(b.wall_ns),
                    _share(b.buckets[PRODUCTIVE], b.wall_ns),
                    *(_seconds(b.buckets[name]) for name in BUCKETS),
                )
                for rank, b in run.ranks.items()
            ]
            align = ("<", *(">",) * (len(headers) - 1))
            lines += format_table(headers, rank_rows, align, indent="  ")  # type: ignore[arg-type]
    return lines
