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
``data_loading``
    inside a span of a goodput group feeding it (Megatron's ``data_loading``);
``startup``, ``recovery``
    a lifetime's time before its first step that no bucketed span covers:
    ``recovery`` when an earlier lifetime of the rank ended before it, else
    ``startup`` (from where every earlier lifetime ended, if later);
``anomalous_steps``
    carved out of productive time: the excess over the ideal step time (the mean
    of the counted steps no slower than median + 3 * MAD) of the steps slower
    than that, a step's time being the productive time it owns;
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

The accounting consumes spans one at a time and keeps, per rank, only the
bucketed spans and the extent of each lifetime, so memory grows with the number
of steps, not of spans.
"""

from __future__ import annotations

import heapq
import itertools
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final, NamedTuple

__all__ = [
    "BADPUT_BUCKETS",
    "BUCKETS",
    "Accountant",
    "Breakdown",
    "GoodputSpan",
    "RunGoodput",
]

PRODUCTIVE: Final = "productive"
WASTED: Final = "wasted_progress"
RESTART: Final = "restart"
UNACCOUNTED: Final = "unaccounted"
STARTUP: Final = "startup"
RECOVERY: Final = "recovery"
ANOMALOUS: Final = "anomalous_steps"
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


class GoodputSpan(NamedTuple):
    """What the accounting needs of one span."""

    run_id: str
    rank: int | None
    lifetime: str
    """The process lifetime that emitted it: a crash and resume makes a new one."""
    bucket: str
    """The schema bucket its group feeds (goodput groups only); empty: transparent."""
    iteration: int | None
    start_ns: int
    end_ns: int
    truncated: bool = False
    """The span never finished (``nemo.span.truncated``): a step's work lost."""


@dataclass(frozen=True)
class StepFigures:
    """A rank's counted steps: how many, how many anomalous, the ideal and the deviation."""

    counted: int = 0
    anomalous: int = 0
    ideal_ns: float | None = None
    deviation_ns: float | None = None

    def as_dict(self) -> dict[str, object]:
        def whole(ns: float | None) -> float | None:
            return None if ns is None else round(ns) / 1e9

        return {
            "counted": self.counted,
            "anomalous": self.anomalous,
            "ideal_s": whole(self.ideal_ns),
            "deviation_s": whole(self.deviation_ns),
        }


@dataclass
class Breakdown:
    """One rank's (or the run's) accounting, in nanoseconds."""

    start_ns: int
    end_ns: int
    buckets: dict[str, int] = field(default_factory=lambda: dict.fromkeys(BUCKETS, 0))
    lifetimes: int = 0
    """How many process lifetimes the figures cover (a crash and resume: two)."""
    steps: StepFigures = field(default_factory=StepFigures)

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


class _Bucketed(NamedTuple):
    start_ns: int
    end_ns: int
    bucket: str
    lifetime: str
    iteration: int | None
    truncated: bool


@dataclass
class _Rank:
    start_ns: int | None = None
    end_ns: int | None = None
    lifetimes: dict[str, list[int]] = field(default_factory=dict)
    """Lifetime -> [first start, last end]."""
    bucketed: list[_Bucketed] = field(default_factory=list)


class Accountant:
    """Feed it spans (:meth:`add`), then ask for each run's figures (:meth:`runs`)."""

    def __init__(self) -> None:
        self._runs: dict[str, dict[int | None, _Rank]] = {}

    def add(self, span: GoodputSpan) -> None:
        rank = self._runs.setdefault(span.run_id, {}).setdefault(span.rank, _Rank())
        start, end = span.start_ns, max(span.end_ns, span.start_ns)
        rank.start_ns = start if rank.start_ns is None else min(rank.start_ns, start)
        rank.end_ns = end if rank.end_ns is None else max(rank.end_ns, end)
        extent = rank.lifetimes.get(span.lifetime)
        if extent is None:
            rank.lifetimes[span.lifetime] = [start, end]
        else:
            extent[0], extent[1] = min(extent[0], start), max(extent[1], end)
        if span.bucket:
            rank.bucketed.append(
                _Bucketed(start, end, span.bucket, span.lifetime, span.iteration, span.truncated)
            )

    def add_all(self, spans: Iterable[GoodputSpan]) -> Accountant:
        for span in spans:
            self.add(span)
        return self

    def runs(self) -> list[RunGoodput]:
        """Every run's figures, runs in name order."""
        return [self._run(run_id, ranks) for run_id, ranks in sorted(self._runs.items())]

    def _run(self, run_id: str, ranks: Mapping[int | None, _Rank]) -> RunGoodput:
        start = min(r.start_ns for r in ranks.values() if r.start_ns is not None)
        end = max(r.end_ns for r in ranks.values() if r.end_ns is not None)
        breakdowns = {key: _account(rank) for key, rank in ranks.items()}

        def slowness(key: int | None) -> tuple[int, int, bool, int]:
            b = breakdowns[key]
            return (b.buckets[PRODUCTIVE], -b.wall_ns, key is None, key or 0)

        stepped = [k for k, b in breakdowns.items() if b.buckets[PRODUCTIVE] + b.buckets[WASTED]]
        bounding = min(stepped or breakdowns, key=slowness)
        chosen = breakdowns[bounding]
        run = Breakdown(start, end, dict(chosen.buckets), chosen.lifetimes, chosen.steps)
        # The run is longer than the bounding rank's own span of time where other
        # ranks started earlier or ended later: nothing of the bounding rank's ran
        # then, so that time is unaccounted for the run.
        run.buckets[UNACCOUNTED] += run.wall_ns - chosen.wall_ns
        ordered = dict(sorted(breakdowns.items(), key=lambda kv: (kv[0] is None, kv[0] or 0)))
        return RunGoodput(run_id, run, bounding, ordered)


def _account(rank: _Rank) -> Breakdown:
    assert rank.start_ns is not None and rank.end_ns is not None
    out = Breakdown(rank.start_ns, rank.end_ns, lifetimes=len(rank.lifetimes))
    # Lifetimes in the order they ran; the time between one's end and the next one's
    # start is the restart (overlapping lifetimes, two processes at once, leave none).
    extents = sorted((s, e) for s, e in rank.lifetimes.values())
    covered_end = extents[0][0]
    live: list[tuple[int, int]] = []
    for start, end in extents:
        if start > covered_end:
            out.buckets[RESTART] += start - covered_end
        if live and start <= live[-1][1]:
            live[-1] = (live[-1][0], max(live[-1][1], end))
        else:
            live.append((start, end))
        covered_end = max(covered_end, end)

    last_run = _last_executions(rank.bucketed)
    spans = sorted(rank.bucketed, key=lambda s: (s.start_ns, -s.end_ns))
    pieces: list[tuple[int, int]] = []
    owned: dict[int, int] = {}  # a counted step's index -> the productive time it owns
    for (start, end), owner in _innermost(spans):
        span = spans[owner]
        bucket = span.bucket
        iteration = span.iteration
        if bucket == PRODUCTIVE and (
            span.truncated or (iteration is not None and last_run[iteration] > span.start_ns)
        ):
            bucket = WASTED  # it never finished, or its iteration ran again later: lost
        out.buckets[bucket] += end - start
        pieces.append((start, end))
        if bucket == PRODUCTIVE:
            owned[owner] = owned.get(owner, 0) + end - start
    bucketed_total = sum(out.buckets[b] for b in (PRODUCTIVE, WASTED, *SCHEMA_BADPUT))
    live_total = sum(e - s for s, e in live)

    for bucket, left, right in _startup_windows(rank):
        inside = sum(max(0, min(b, right) - max(a, left)) for a, b in pieces)
        out.buckets[bucket] += right - left - inside

    # Steps in the order they started (the longer first on a tie, as the engine orders).
    times = [owned[i] for i in sorted(owned, key=lambda i: (spans[i].start_ns, owned[i]))]
    out.steps, excess = _step_figures(times)
    out.buckets[PRODUCTIVE] -= excess
    out.buckets[ANOMALOUS] = excess
    out.buckets[UNACCOUNTED] = (
        live_total - bucketed_total - out.buckets[STARTUP] - out.buckets[RECOVERY]
    )
    return out


def _startup_windows(rank: _Rank) -> Iterable[tuple[str, int, int]]:
    """(bucket, from, to): each lifetime's time before its first step, from where every
    lifetime that started before it ended (if later); recovery after an earlier one."""
    first_step: dict[str, int] = {}
    for span in rank.bucketed:
        if span.bucket == PRODUCTIVE:
            first_step[span.lifetime] = min(
                first_step.get(span.lifetime, span.start_ns), span.start_ns
            )
    ended: int | None = None
    for lifetime, (start, end) in sorted(rank.lifetimes.items(), key=lambda kv: tuple(kv[1])):
        first = first_step.get(lifetime)
        left = start if ended is None else max(start, ended)
        if first is not None and first > left:
            yield (STARTUP if ended is None else RECOVERY), left, first
        ended = end if ended is None else max(ended, end)


def _step_figures(times: Sequence[int]) -> tuple[StepFigures, int]:
    """Google's rule on the counted steps' times, in start order: the figures and the
    anomalous steps' excess over the ideal, in whole nanoseconds (rounded up)."""
    if not times:
        return StepFigures(), 0
    median = statistics.median(times)
    mad = statistics.median(abs(t - median) for t in times)
    normal = [t for t in times if t <= median + 3 * mad]
    anomalous = [t for t in times if t > median + 3 * mad]
    excess = sum(anomalous) - len(anomalous) * sum(normal) // len(normal)
    ideal = sum(normal) / len(normal)
    deviations = [abs(t - ideal) for t in times]
    if len(times) < 100:
        deviation = statistics.fmean(deviations)
    else:
        deviation = _percentile(deviations[-100:], 0.9)
        if len(times) >= 1100:
            deviation -= _percentile(deviations[-1100:-100], 0.5)
    return StepFigures(len(times), len(anomalous), ideal, deviation), excess


def _percentile(values: Sequence[float], fraction: float) -> float:
    """Linear interpolation between the two closest ranks (numpy's default)."""
    ordered = sorted(values)
    at = (len(ordered) - 1) * fraction
    low = int(at)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (at - low)


def _last_executions(spans: Iterable[_Bucketed]) -> dict[int, int]:
    """Iteration -> the start of its last execution (the one that counts)."""
    last: dict[int, int] = {}
    for span in spans:
        if span.bucket == PRODUCTIVE and span.iteration is not None:
            last[span.iteration] = max(last.get(span.iteration, span.start_ns), span.start_ns)
    return last


def _innermost(spans: list[_Bucketed]) -> Iterable[tuple[tuple[int, int], int]]:
    """Cut time into pieces, each with the index of the innermost span covering it.

    *spans* are sorted by start (outer first on ties). The innermost covering span is
    the one that started last among those still open; a heap ordered by that keeps
    it on top, and spans that ended are dropped lazily.
    """
    boundaries = sorted({t for s in spans for t in (s.start_ns, s.end_ns)})
    heap: list[tuple[int, int, int]] = []  # (-start, length, index): latest start on top
    following = 0
    for left, right in itertools.pairwise(boundaries):
        while following < len(spans) and spans[following].start_ns <= left:
            span = spans[following]
            heapq.heappush(heap, (-span.start_ns, span.end_ns - span.start_ns, following))
            following += 1
        while heap and spans[heap[0][2]].end_ns <= left:
            heapq.heappop(heap)
        if heap:
            yield (left, right), heap[0][2]
