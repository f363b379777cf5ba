"""``python -m bench.profilers``: what profiler mirroring costs per span, against a bare NVTX
start/end range and a bare ``record_function`` measured in the same run (docs/benchmarks.md)."""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Callable

from nemo.lens import NemoLensConfig, managed_span, setup_telemetry
from nemo.lens._core import state
from nemo.lens.groups import SpanGroup

__all__ = ["main"]


def _per_call_ns(body: Callable[[], None], loops: int, repeats: int = 5) -> float:
    """The best of *repeats* timings of *loops* calls, per call (the least disturbed)."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter_ns()
        for _ in range(loops):
            body()
        best = min(best, (time.perf_counter_ns() - start) / loops)
    return best


def _span() -> None:
    with managed_span(SpanGroup.STEP, "train.step"):
        pass


def _span_cost(profiler: str, directory: str, loops: int) -> float:
    config = NemoLensConfig(
        enabled=True,
        exporter="file",
        trace_file=f"{directory}/{profiler or 'off'}.jsonl",
        span_groups="all",
        metrics_enabled=False,
        profiler=profiler,
    )
    handle = setup_telemetry(config, rank=0, world_size=1)
    try:
        return _per_call_ns(_span, loops)
    finally:
        handle.shutdown()
        state.set_enabled_span_groups(frozenset())


def main(loops: int = 20_000) -> None:
    """Print ns per span with mirroring off and on, and the bare tools' ns per range."""
    import nvtx
    from torch.profiler import record_function

    domain = nvtx.get_domain("nemo.lens")
    attributes = domain.get_event_attributes(message="train.step", category="step")

    def bare_nvtx() -> None:
        domain.end_range(domain.start_range(attributes))

    def bare_torch() -> None:
        with record_function("step/train.step"):
            pass

    with tempfile.TemporaryDirectory() as directory:
        off = _span_cost("", directory, loops)
        rows = {
            profiler: _span_cost(profiler, directory, loops)
            for profiler in ("nvtx", "torch", "nvtx,torch")
        }
    nvtx_ns = _per_call_ns(bare_nvtx, loops)
    torch_ns = _per_call_ns(bare_torch, loops)
    print(f"span, mirroring off        {off:9.0f} ns")
    print(f"bare NVTX start/end        {nvtx_ns:9.0f} ns")
    print(f"bare record_function       {torch_ns:9.0f} ns")
    for profiler, cost in rows.items():
        extra = cost - off
        bare = {"nvtx": nvtx_ns, "torch": torch_ns}.get(profiler, nvtx_ns + torch_ns)
        print(
            f"span, profiler={profiler:<10} {cost:9.0f} ns  {cost / off:5.2f}x off; "
            f"mirroring adds {extra:7.0f} ns = {extra / bare:5.2f}x the bare tool"
        )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20_000)
