"""The targets of issues 5 and 16, keyed by the measurement they apply to.

Shared by the runner (which marks each row of its table) and by
:mod:`bench.check` (which judges a results file against these values, not
against whatever targets the file itself recorded).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

__all__ = ["TARGETS", "Target"]


@dataclass(frozen=True)
class Target:
    """An upper bound on one measurement."""

    key: str
    """The measurement's key in the results' ``measurements`` mapping."""
    description: str
    limit: float
    unit: str
    hint: str = ""
    """What a miss usually means, printed by :mod:`bench.check`."""
    at_least: bool = False
    """A lower bound (a rate) rather than an upper one."""

    def met(self, value: float) -> bool:
        """Whether ``value`` is within the target (``value <= limit``; ``>=`` for a lower bound)."""
        return value >= self.limit if self.at_least else value <= self.limit

    def describe_limit(self) -> str:
        """The target as the issue states it, e.g. ``<= 0.8x`` or ``>= 100,000 spans/s``."""
        if self.at_least:
            return f">= {self.limit:,g} {self.unit}"
        if self.unit == "x":
            return f"<= {self.limit:g}x"
        if self.unit == "ms":
            return f"<= +{self.limit:g} ms"
        return f"<= {self.limit:g} {self.unit}"


TARGETS: Final = (
    Target("disabled_managed_span", "disabled managed_span / nullcontext()", 0.8, "x"),
    Target("disabled_trace_fn", "disabled trace_fn call / plain call", 3.0, "x"),
    Target("is_span_group_enabled", "is_span_group_enabled / frozenset test", 1.5, "x"),
    Target("enabled_managed_span", "enabled managed_span / start_as_current_span", 1.05, "x"),
    Target("enabled_trace_fn", "enabled trace_fn / start_as_current_span", 1.05, "x"),
    Target("enabled_span_cm", "enabled span_cm / start_as_current_span", 1.05, "x"),
    Target(
        "recording_managed_span",
        "enabled managed_span, nemo.lens's pipeline / SDK span + BatchSpanProcessor",
        0.30,
        "x",
    ),
    Target(
        "recording_trace_fn",
        "enabled trace_fn call, nemo.lens's pipeline / SDK span + BatchSpanProcessor",
        0.30,
        "x",
    ),
    Target(
        "recording_span_cm",
        "enabled span_cm, nemo.lens's pipeline / SDK span + BatchSpanProcessor",
        0.30,
        "x",
    ),
    Target(
        "import_instrumented_module",
        "import cost: from nemo.lens import managed_span, SpanGroup (CPU, vs OTel API)",
        10.0,
        "ms",
    ),
    Target(
        "disabled_memory_growth",
        "tracemalloc growth over 1,000,000 calls of each disabled path (worst)",
        1024,
        "bytes",
    ),
    Target(
        "sustained_rate_shortfall",
        "how far emission fell short of 20,000 spans/s (else the next two prove nothing)",
        5,
        "%",
        hint="this process could not get the CPU to emit 20,000 spans/s (compare the load "
        "average with the CPU count); re-run `make bench` on a quieter machine",
    ),
    Target("sustained_dropped", "spans dropped at a sustained 20,000 spans/s", 0, "spans"),
    Target(
        "sustained_rss_growth",
        "RSS growth at a sustained 20,000 spans/s, after warm-up",
        32,
        "MiB",
    ),
    Target(
        "burst_spans_per_s",
        "file exporter end to end: a burst of spans emitted, shut down, all in the file "
        "(the median burst)",
        100_000,
        "spans/s",
        hint="the emitting thread and the export thread share one interpreter lock: their CPU "
        "per span (the burst row's 'emit+export') adds up; compare the load average too",
        at_least=True,
    ),
    Target("burst_dropped", "spans missing from the file after a burst (the worst)", 0, "spans"),
    Target(
        "queued_span_bytes",
        "memory held per queued span (tracemalloc, export stalled)",
        1024,
        "bytes",
    ),
)
"""Every target, in the order the issue lists them."""
