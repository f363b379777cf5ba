"""``nemo-lens stragglers``: per run, sync group and rank, how late the rank arrived at the
group's spans against the median rank and how often it was last (``queries/arrivals.sql``;
docs/stragglers.md), the worst score first."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

from nemo.lens.cli._common import EXIT_OK, message, print_json_lines, print_lines, with_engine
from nemo.lens.cli._engine import query
from nemo.lens.cli._table import format_duration, format_table

if TYPE_CHECKING:
    from nemo.lens.cli._engine import Engine

__all__ = ["Arrival", "arrival_stragglers", "cmd_stragglers", "format_stragglers"]


@dataclass(frozen=True)
class Arrival:
    """One rank at one sync group of one run: a row of ``queries/arrivals.sql``."""

    run_id: str
    span_group: str
    rank: int
    node: str
    """The ``host.name`` of its spans (``''`` when the resource has none)."""
    iterations: int
    """The iterations it reached the group with at least one other rank."""
    times_last: int
    last_share: float
    median_lateness_ns: int
    max_lateness_ns: int
    score: float
    """1 on time; towards 0 as its median lateness outgrows the group's time per iteration."""
    pattern: str
    """``persistent`` (last at most iterations), ``rotating`` (last at some) or ``''``."""


def arrival_stragglers(engine: Engine) -> list[Arrival]:
    """The rows of ``queries/arrivals.sql``, in its order (the worst score first)."""
    return [Arrival(*row) for row in engine.rows(query("arrivals"))]


def _signed(nanoseconds: int) -> str:
    return ("-" if nanoseconds < 0 else "") + format_duration(abs(nanoseconds))


_HEADERS = ("rank", "node", "times last", "median lateness", "score", "pattern")


def format_stragglers(rows: Sequence[Arrival]) -> list[str]:
    """Per run and group a heading, then its ranks, the worst score first; the run is named
    only when the inputs hold several."""
    several_runs = len({row.run_id for row in rows}) > 1
    order: dict[tuple[str, str], list[Arrival]] = {}
    for row in rows:
        order.setdefault((row.run_id, row.span_group), []).append(row)
    lines: list[str] = []
    for (run_id, group), ranks in sorted(order.items()):
        if lines:
            lines.append("")
        where = f" of run {run_id}" if several_runs and run_id else ""
        lines.append(f"{group}{where}: arrival over {ranks[0].iterations} iterations")
        table = [
            (
                str(r.rank),
                r.node or "-",
                f"{r.times_last}/{r.iterations}",
                _signed(r.median_lateness_ns),
                f"{r.score:.3f}",
                r.pattern or "-",
            )
            for r in ranks
        ]
        lines += format_table(_HEADERS, table, ("<", "<", ">", ">", ">", "<"), indent="  ")
    return lines


def _note_gaps(engine: Engine) -> None:
    """Say on stderr why the table is empty or short, and the fix."""
    ((sync_spans, without_rank),) = engine.rows(
        "SELECT count(*), count(CASE WHEN s.rank IS NULL THEN 1 END) "
        "FROM spans s JOIN span_groups g ON g.span_group = s.span_group WHERE g.sync"
    )
    groups = ", ".join(
        r[0]
        for r in engine.rows("SELECT span_group FROM span_groups WHERE sync ORDER BY span_group")
    )
    if not sync_spans:
        message(
            "note",
            f"no span of a sync group ({groups or 'none in the selected classes'}), so no "
            "arrival to compare; record them (NEMO_LENS_SPAN_GROUPS=per_step)",
        )
    elif without_rank:
        message(
            "note",
            f"{without_rank} of {sync_spans} spans of sync groups carry no rank and are left "
            "out; set dl.rank (or nemo.rank) on each process's resource",
        )


def cmd_stragglers(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    def work(engine: Engine) -> int:
        _note_gaps(engine)
        rows = arrival_stragglers(engine)
        if args.json:
            print_json_lines(asdict(row) for row in rows)
        else:
            print_lines(format_stragglers(rows))
        return EXIT_OK

    # detail: the node is the resource's host.name.
    return with_engine(
        args, work, iteration_attribute=args.iteration_attribute, labels=False, detail=True
    )
