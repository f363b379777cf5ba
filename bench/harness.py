"""Timing machinery: paired, interleaved samples of a candidate against its baseline.

A shared 2-core machine is noisy in two ways: other processes take the CPU
away (long pauses), and they disturb caches and clock speed (slow drifts).
The harness answers the first with CPU time of the measuring thread
(:func:`time.thread_time_ns`, which does not advance while the thread waits
for a CPU) and the second by pairing: each sample of the candidate is taken
right next to a sample of its baseline, in alternating order (ABBA), and only
the ratio within a pair is kept. (On a virtual machine, time the host takes
the virtual CPU away does count as CPU time; pairing is what absorbs that.)
The reported ratio is the median of many pair ratios; the spread is their
interquartile range, and a distribution-free 95 % confidence interval of the
median says how stable that median is. Absolute nanoseconds are reported too,
but on a busy machine only the ratios are worth comparing between runs.

Statements are compiled into a loop unrolled :data:`UNROLL` times, as pyperf
and timeit do, so the loop's own overhead is a small share of each sample and
the same for both sides. The loop iterates over ``itertools.repeat`` so that
the loop itself allocates nothing (a ``range`` makes an ``int`` per turn).
"""

from __future__ import annotations

import gc
import itertools
import math
import statistics
import textwrap
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, cast

__all__ = [
    "UNROLL",
    "Comparison",
    "Runner",
    "Spread",
    "compare",
    "compile_runner",
    "median_ci",
    "quantile",
    "spread",
]

UNROLL = 20
"""How many copies of a statement one turn of a compiled loop runs."""


@dataclass(frozen=True)
class Runner:
    """A statement compiled into a loop: ``run(loops)`` executes it ``loops * unroll`` times."""

    run: Callable[[int], None]
    unroll: int

    def __call__(self, loops: int) -> None:
        """Run the loop ``loops`` times."""
        self.run(loops)


def compile_runner(
    statement: str, namespace: Mapping[str, object], *, name: str, unroll: int = UNROLL
) -> Runner:
    """Compile ``statement`` into a loop running it ``loops * unroll`` times.

    ``namespace`` becomes the function's globals (copied), so the statement
    reads its names the way code at module level of an instrumented module
    does: one specialised global load each.
    """
    body = textwrap.indent("\n".join([textwrap.dedent(statement).strip()] * unroll), " " * 8)
    source = f"def run(loops):\n    for _ in _bench_repeat(None, loops):\n{body}\n"
    scope: dict[str, Any] = dict(namespace)
    scope["_bench_repeat"] = itertools.repeat
    exec(compile(source, f"<bench {name}>", "exec"), scope)
    return Runner(cast(Callable[[int], None], scope["run"]), unroll)


def quantile(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile of ``values`` by linear interpolation (as numpy's default)."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError("quantile of no values")
    position = (len(ordered) - 1) * q
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def median_ci(values: Sequence[float]) -> tuple[float, float]:
    """A distribution-free ~95 % confidence interval of the median of ``values``.

    The order statistics ``n/2 -/+ 0.98 * sqrt(n)`` (the normal approximation of
    the binomial, ``1.96 / 2``): valid for any distribution of the samples,
    which on a noisy machine are anything but normal.
    """
    ordered = sorted(values)
    n = len(ordered)
    half_width = 0.98 * math.sqrt(n)
    low = max(0, math.floor(n / 2 - half_width))
    high = min(n - 1, math.ceil(n / 2 + half_width) - 1)
    return ordered[low], ordered[high]


@dataclass(frozen=True)
class Spread:
    """The median of some samples and how widely they scatter."""

    median: float
    p25: float
    p75: float
    ci_low: float
    ci_high: float
    n: int

    @property
    def iqr_pct(self) -> float:
        """The interquartile range as a percentage of the median."""
        return 100.0 * (self.p75 - self.p25) / self.median if self.median else math.nan

    def as_dict(self) -> dict[str, float]:
        """The fields plus ``iqr_pct``, for the JSON results."""
        fields: dict[str, float] = asdict(self)
        fields["iqr_pct"] = self.iqr_pct
        return fields


def spread(values: Sequence[float]) -> Spread:
    """Summarise ``values``: median, quartiles and the 95 % CI of the median."""
    low, high = median_ci(values)
    return Spread(
        median=statistics.median(values),
        p25=quantile(values, 0.25),
        p75=quantile(values, 0.75),
        ci_low=low,
        ci_high=high,
        n=len(values),
    )


@dataclass(frozen=True)
class Comparison:
    """The outcome of :func:`compare`."""

    ratio: Spread
    """Candidate time over baseline time, one value per interleaved pair."""
    candidate_ns: Spread
    """Nanoseconds per candidate operation, one value per sample."""
    baseline_ns: Spread
    """Nanoseconds per baseline operation, one value per sample."""
    operations_per_sample: int

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "ratio": self.ratio.as_dict(),
            "candidate_ns": self.candidate_ns.as_dict(),
            "baseline_ns": self.baseline_ns.as_dict(),
            "operations_per_sample": self.operations_per_sample,
        }


def _sample(runner: Runner, loops: int) -> int:
    start = time.thread_time_ns()
    runner(loops)
    return time.thread_time_ns() - start


def _calibrate(runner: Runner, sample_s: float, between: Callable[[], None] | None) -> int:
    """How many loops make one sample of ``runner`` last about ``sample_s`` of CPU time."""
    loops = 1
    while True:
        elapsed = _sample(runner, loops)
        if between is not None:
            between()
        if elapsed >= sample_s * 1e9 / 4 or loops >= 1 << 30:
            return max(1, round(loops * sample_s * 1e9 / max(elapsed, 1)))
        loops *= 2


def compare(
    candidate: Runner,
    baseline: Runner,
    *,
    pairs: int,
    sample_s: float,
    warmup_pairs: int = 3,
    between: Callable[[], None] | None = None,
    collect_garbage: bool = False,
) -> Comparison:
    """Time ``candidate`` against ``baseline`` in ``pairs`` interleaved pairs of samples.

    Both runners must be unrolled alike; they get the same number of loops,
    calibrated so a baseline sample takes about ``sample_s`` seconds of CPU
    time. ``between`` runs after every
    sample, outside the timing (e.g. clearing an in-memory exporter). The
    cyclic garbage collector is off while sampling, as in :mod:`timeit`; with
    ``collect_garbage`` a collection runs between pairs, outside the timing, so
    garbage from one pair never lands in another's sample.
    """
    if candidate.unroll != baseline.unroll:
        raise ValueError("candidate and baseline must be unrolled alike")
    loops = _calibrate(baseline, sample_s, between)
    ratios: list[float] = []
    candidate_ns: list[float] = []
    baseline_ns: list[float] = []
    operations = loops * baseline.unroll
    was_enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        for index in range(warmup_pairs + pairs):
            # ABBA: a slow drift (clock speed, a neighbour's job) weighs on both
            # sides equally instead of always on the one measured second.
            order = (candidate, baseline) if index % 2 == 0 else (baseline, candidate)
            elapsed = []
            for runner in order:
                elapsed.append(_sample(runner, loops))
                if between is not None:
                    between()
            if collect_garbage:
                gc.collect()
            if index < warmup_pairs:
                continue
            cand, base = elapsed if order[0] is candidate else elapsed[::-1]
            ratios.append(cand / base)
            candidate_ns.append(cand / operations)
            baseline_ns.append(base / operations)
    finally:
        if was_enabled:
            gc.enable()
    return Comparison(
        ratio=spread(ratios),
        candidate_ns=spread(candidate_ns),
        baseline_ns=spread(baseline_ns),
        operations_per_sample=operations,
    )
