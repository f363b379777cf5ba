"""Do the disabled paths allocate per call? ``tracemalloc`` over a million calls each.

Runs in its own interpreter (``python -m bench.memory``) so that no other
thread of the benchmark process -- an export thread, a metric reader --
allocates while memory is traced. Nothing is set up: every group is off, as in
a job that did not enable telemetry.

For each statement, after a warm-up, it records the memory traced before a
million executions, after them (``growth``: anything kept per call would show
here, a million times over, as megabytes) and at the peak in between
(``transient``: the most held at once, so an allocation made and freed by
every call shows as one object's size, not a million). The reading itself
creates an object or two, and CPython may park a block in a free list once, so
a few tens of bytes either way are the resolution, not a trend: the same
figures come out for 200,000 calls as for 1,000,000. An empty loop is
measured the same way to show what the harness itself holds.
"""

from __future__ import annotations

import argparse
import gc
import json
import tracemalloc
from collections.abc import Sequence
from typing import Any, Final

from bench.harness import UNROLL, compile_runner

__all__ = ["STATEMENTS", "main", "measure_allocations"]

STATEMENTS: Final = {
    "empty loop": "pass",
    "disabled managed_span": "with managed_span(SpanGroup.STEP, 'bench.span'): pass",
    "disabled managed_span, 1 attribute": (
        "with managed_span(SpanGroup.STEP, 'bench.span', iteration=1): pass"
    ),
    "disabled trace_fn call": "traced_work(1)",
    "is_span_group_enabled": "is_span_group_enabled(SpanGroup.STEP)",
}
"""What is traced, by the name the report uses."""


def _work(x: int) -> int:
    return x


def measure_allocations(calls: int) -> dict[str, dict[str, int]]:
    """Trace ``calls`` executions of each statement; bytes of growth and transient peak."""
    from nemo.lens import is_span_group_enabled, managed_span, testing, trace_fn
    from nemo.lens.groups import SpanGroup

    testing.reset()
    namespace: dict[str, object] = {
        "SpanGroup": SpanGroup,
        "managed_span": managed_span,
        "is_span_group_enabled": is_span_group_enabled,
        "traced_work": trace_fn(SpanGroup.STEP, "bench.work")(_work),
    }
    loops = max(1, calls // UNROLL)
    results: dict[str, dict[str, int]] = {}
    for label, statement in STATEMENTS.items():
        run = compile_runner(statement, namespace, name=label)
        run(max(1, 10_000 // UNROLL))  # specialise the bytecode, fill free lists
        gc.collect()
        gc.disable()
        tracemalloc.start()
        try:
            run(100)  # anything the first traced calls set up once is not "per call"
            tracemalloc.reset_peak()
            before, _ = tracemalloc.get_traced_memory()
            run(loops)
            after, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
            gc.enable()
        results[label] = {
            "calls": loops * UNROLL,
            "growth_bytes": after - before,
            "transient_bytes": peak - before,
        }
    return results


def main(argv: Sequence[str] | None = None) -> None:
    """Print the measurements as one JSON line."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=1_000_000)
    args = parser.parse_args(argv)
    report: dict[str, Any] = {"allocations": measure_allocations(args.calls)}
    print(json.dumps(report))


if __name__ == "__main__":
    main()
