"""``nemo-lens summarize``: per process and span group, the spans' count, total, mean, p50 and
p99 duration (``queries/summary.sql``; percentiles interpolate linearly, as numpy's do)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from nemo.lens.cli._common import EXIT_OK, Process, plural, print_lines, with_engine
from nemo.lens.cli._engine import query
from nemo.lens.cli._table import format_duration, format_table

if TYPE_CHECKING:
    from nemo.lens.cli._engine import Engine

__all__ = ["GroupStats", "ProcessSummary", "cmd_summarize", "summarize"]


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


def summarize(engine: Engine) -> list[ProcessSummary]:
    """Every process's figures (``queries/summary.sql``), in rank order (unknown last); its
    groups by total duration, largest first (ties by name): from the job down."""
    by_process: dict[Process, list[GroupStats]] = {}
    for run_id, rank, service, group, count, total, p50, p99 in engine.rows(query("summary")):
        process = Process(rank=rank, run_id=run_id, service=service)
        total = int(total)
        by_process.setdefault(process, []).append(
            GroupStats(
                group=group,
                count=count,
                total_ns=total,
                mean_ns=total / count,
                p50_ns=float(p50),
                p99_ns=float(p99),
            )
        )
    summaries = []
    for process in sorted(by_process, key=Process.sort_key):
        stats = sorted(by_process[process], key=lambda item: (-item.total_ns, item.group))
        summaries.append(
            ProcessSummary(
                process=process,
                span_count=sum(item.count for item in stats),
                groups=tuple(stats),
            )
        )
    return summaries


_HEADERS = ("group", "spans", "total", "mean", "p50", "p99")


def format_summary(summaries: Sequence[ProcessSummary]) -> list[str]:
    """Per process a heading, then its table; the heading names the run only when the
    inputs hold several (a file that several runs appended to)."""
    several_runs = len({summary.process.run_id for summary in summaries}) > 1
    lines: list[str] = []
    for summary in summaries:
        process = summary.process
        details = []
        if process.service:
            details.append(f"service {process.service}")
        if process.run_id and not several_runs:
            details.append(f"run {process.run_id}")
        details.append(plural(summary.span_count, "span"))
        if lines:
            lines.append("")
        lines.append(f"{process.label(with_run=several_runs)} ({', '.join(details)})")
        rows = [
            (
                item.group,
                str(item.count),
                format_duration(item.total_ns),
                format_duration(item.mean_ns),
                format_duration(item.p50_ns),
                format_duration(item.p99_ns),
            )
            for item in summary.groups
        ]
        lines.extend(format_table(_HEADERS, rows, ("<", ">", ">", ">", ">", ">"), indent="  "))
    return lines


def cmd_summarize(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    def work(engine: Engine) -> int:
        print_lines(format_summary(summarize(engine)))
        return EXIT_OK

    return with_engine(args, work, labels=False)
