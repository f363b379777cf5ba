"""Per-rank, per-group duration statistics of a trace, and the table that shows them.

What ``nemo-lens summarize`` prints and the demo ends with. For every process
(rank of a run) and every span group: how many spans, their total duration,
mean, median (p50) and 99th percentile (p99).

Percentiles interpolate linearly between the two nearest ranks (numpy's
default, so numbers match a notebook's), and ``total`` adds durations up as
they are: a group whose spans nest inside each other counts the overlap twice.
"""

from __future__ import annotations

import math
from array import array
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from tests.cli.reference.read import Process, Span

__all__ = ["GroupStats", "ProcessSummary", "percentile", "summarize"]


@dataclass(frozen=True)
class GroupStats:
    """Duration statistics of one group's spans on one process (nanoseconds)."""

    group: str
    count: int
    total_ns: int
    mean_ns: float
    p50_ns: float
    p99_ns: float


@dataclass(frozen=True)
class ProcessSummary:
    """The groups of one process, by total duration, largest first."""

    process: Process
    span_count: int
    groups: tuple[GroupStats, ...]


def percentile(ordered: Sequence[int], fraction: float) -> float:
    """Return the ``fraction`` quantile (0..1) of ascending ``ordered``, interpolated linearly."""
    if not ordered:
        raise ValueError("percentile of no values")
    if not 0.0 <= fraction <= 1.0:
        raise ValueError(f"fraction must be between 0 and 1, got {fraction}")
    position = (len(ordered) - 1) * fraction
    below = math.floor(position)
    above = min(below + 1, len(ordered) - 1)
    weight = position - below
    return ordered[below] + (ordered[above] - ordered[below]) * weight


def summarize(spans: Iterable[Span]) -> list[ProcessSummary]:
    """Group ``spans`` by process and span group and compute their statistics.

    Processes come in rank order (unknown ranks last); within one, groups come
    by total duration, largest first (ties by name), so the table reads from
    the job down to its smallest parts.
    """
    # Signed 64-bit arrays, not lists of ints: 8 bytes a span instead of about 36,
    # so a million-span trace summarizes in a few megabytes.
    durations: dict[Process, dict[str, array[int]]] = defaultdict(
        lambda: defaultdict(lambda: array("q"))
    )
    for span in spans:
        durations[span.process][span.group].append(span.duration_ns)
    summaries = []
    for process in sorted(durations, key=Process.sort_key):
        stats = []
        for group, unsorted in durations[process].items():
            values = sorted(unsorted)
            total = sum(values)
            stats.append(
                GroupStats(
                    group=group,
                    count=len(values),
                    total_ns=total,
                    mean_ns=total / len(values),
                    p50_ns=percentile(values, 0.50),
                    p99_ns=percentile(values, 0.99),
                )
            )
        stats.sort(key=lambda item: (-item.total_ns, item.group))
        summaries.append(
            ProcessSummary(
                process=process,
                span_count=sum(item.count for item in stats),
                groups=tuple(stats),
            )
        )
    return summaries
