"""Stragglers by arrival, computed the plain way, as an oracle for ``queries/arrivals.sql``.

A sync span (of a group whose schema entry says ``sync = true``) arrives at its
iteration: its own, else the iteration of its lifetime's latest step (the highest
iteration of the steps started at or before it in the same 2^40 ns chunk of the run,
a step counting in the chunk it ends in too) while that step has not ended. A rank's
arrival at an iteration is its first sync span there in its last lifetime that reached
it (the latest arrival); its lateness is that arrival less the median rank's. Medians
interpolate; nanoseconds round half away from zero, as SQL's ROUND does.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = ["Row", "Span", "arrivals"]

CHUNK_NS = 1 << 40
Row = tuple[str, str, int, str, int, int, float, int, int, float, str]
"""run_id, span_group, rank, node, iterations, times_last, last_share, median_lateness_ns,
max_lateness_ns, score, pattern."""


@dataclass(frozen=True)
class Span:
    run_id: str
    rank: int
    lifetime: str
    group: str
    start_ns: int
    end_ns: int
    iteration: int | None
    host: str = ""


def _median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    middle = (len(ordered) - 1) / 2
    low, high = ordered[math.floor(middle)], ordered[math.ceil(middle)]
    return low + (high - low) * (middle - math.floor(middle))


def _round(value: float) -> int:
    return int(math.copysign(math.floor(abs(value) + 0.5), value))


def _enclosing(span: Span, steps: Iterable[Span], base: int) -> int | None:
    at = span.start_ns - base
    chunk = at // CHUNK_NS
    before = [
        s
        for s in steps
        if s.start_ns - base <= at
        and chunk in {(s.start_ns - base) // CHUNK_NS, (s.end_ns - base) // CHUNK_NS}
    ]
    if not before:
        return None
    iteration = max(s.iteration for s in before if s.iteration is not None)
    return iteration if at < max(s.end_ns - base for s in before) else None


def arrivals(spans: Sequence[Span], sync: set[str], step: str) -> list[Row]:
    """The rows ``nemo-lens stragglers --json`` gives, in its order, as tuples of its fields."""
    base: dict[str, int] = {}
    for s in spans:
        base[s.run_id] = min(base.get(s.run_id, s.start_ns), s.start_ns)
    steps: dict[tuple[str, int, str], list[Span]] = defaultdict(list)
    for s in spans:
        if s.group == step and s.iteration is not None:
            steps[s.run_id, s.rank, s.lifetime].append(s)
    arrived: dict[tuple[str, int, str, int, str], list[int]] = defaultdict(list)
    busy: dict[tuple[str, int, str, int, str], int] = defaultdict(int)
    nodes: dict[tuple[str, int], str] = {}
    for s in spans:
        if s.group not in sync:
            continue
        nodes[s.run_id, s.rank] = max(nodes.get((s.run_id, s.rank), s.host), s.host)
        iteration = s.iteration
        if iteration is None:
            iteration = _enclosing(s, steps[s.run_id, s.rank, s.lifetime], base[s.run_id])
        if iteration is None:
            continue
        key = (s.run_id, s.rank, s.group, iteration, s.lifetime)
        arrived[key].append(s.start_ns - base[s.run_id])
        busy[key] += s.end_ns - s.start_ns
    latest: dict[tuple[str, int, str, int], tuple[int, int]] = {}
    for executed, starts in arrived.items():
        found = (min(starts), busy[executed])
        point = executed[:4]
        if point not in latest or found[0] > latest[point][0]:
            latest[point] = found
    points: dict[tuple[str, str, int], list[int]] = defaultdict(list)
    for (run, _, group, iteration), (arrival, _spent) in latest.items():
        points[run, group, iteration].append(arrival)
    per_rank: dict[tuple[str, str, int], list[tuple[float, bool, int]]] = defaultdict(list)
    for (run, rank, group, iteration), (arrival, spent) in latest.items():
        there = points[run, group, iteration]
        if len(there) < 2:
            continue
        median = _median(there)
        last = arrival == max(there) and arrival > median
        per_rank[run, group, rank].append((arrival - median, last, spent))
    medians = {key: _median([spent for *_, spent in rows]) for key, rows in per_rank.items()}
    rows: list[Row] = []
    for (run, group, rank), late in per_rank.items():
        scale = _median([m for (r, g, _), m in medians.items() if (r, g) == (run, group)])
        lateness = _median([x for x, *_ in late])
        times_last = sum(1 for _, last, _ in late if last)
        score = 1.0 if lateness <= 0 else round(scale / (scale + lateness), 4)
        pattern = "persistent" if 2 * times_last > len(late) else "rotating" if times_last else ""
        rows.append(
            (
                run,
                group,
                rank,
                nodes.get((run, rank), ""),
                len(late),
                times_last,
                round(times_last / len(late), 4),
                _round(lateness),
                _round(max(x for x, *_ in late)),
                score,
                pattern,
            )
        )
    return sorted(rows, key=lambda r: (r[9], -r[5], r[0], r[1], r[2]))
