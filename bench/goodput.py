"""``python -m bench.goodput``: what the live goodput recorder costs. The emitting thread's CPU
per step span with the recorder on against the same pipeline with it off (interleaved pairs),
and the collecting thread's CPU per span to account what ended. Ratios, not pass/fail."""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from bench.harness import compare, compile_runner

__all__ = ["run_goodput"]


def run_goodput(
    pairs: int = 31, sample_s: float = 0.01, accounted: int = 200_000
) -> dict[str, Any]:
    """Measure; see the module docstring."""
    from nemo.lens import NemoLensConfig, managed_span, setup_telemetry
    from nemo.lens._sdk.goodput import POLL_SPANS
    from nemo.lens._sdk.pipeline import Pipeline, build_pipeline
    from nemo.lens._sdk.recording import LensTracerProvider
    from nemo.lens.groups import SpanGroup

    with tempfile.TemporaryDirectory(prefix="nemo-lens-bench-") as directory:

        def config(name: str, goodput: str) -> NemoLensConfig:
            return NemoLensConfig(
                enabled=True,
                exporter="file",
                trace_file=str(Path(directory) / f"{name}.jsonl"),
                span_groups="all",
                run_id="bench",
                goodput_metrics=goodput,
            )

        # Set-up enables the groups; the two pipelines compared are built alike beside it,
        # one with the recorder and one without, and their primitives' tracers passed in.
        handle = setup_telemetry(config("installed", ""))

        def pipeline(name: str, goodput: str) -> Pipeline:
            return build_pipeline(
                config(name, goodput).resolved(),
                rank=0,
                world_size=1,
                exporting=True,
                trace_path=str(Path(directory) / f"{name}.jsonl"),
                metric_reader=InMemoryMetricReader(),
            )

        on, off = pipeline("on", "1"), pipeline("off", "")
        try:
            recorder = on.goodput
            assert recorder is not None and off.goodput is None
            assert isinstance(on.tracer_provider, LensTracerProvider)
            assert isinstance(off.tracer_provider, LensTracerProvider)
            on_tracer = on.tracer_provider.primitives_tracer()
            namespace = {
                "managed_span": managed_span,
                "STEP": SpanGroup.STEP,
                "on_tracer": on_tracer,
                "off_tracer": off.tracer_provider.primitives_tracer(),
            }
            statement = "with managed_span(STEP, 'step', {}, iteration=1):\n    pass"
            candidate = compile_runner(statement.format("on_tracer"), namespace, name="goodput on")
            baseline = compile_runner(statement.format("off_tracer"), namespace, name="goodput off")
            emitting = compare(
                candidate,
                baseline,
                pairs=pairs,
                sample_s=sample_s,
                between=recorder.drain,  # the collecting thread's work, outside the timing
                collect_garbage=True,
            )
            recorder.drain()
            # The accounting itself: *accounted* spans that ended (steps, each with a nested
            # profiling span), drained by the batch the export thread's poll takes (its polls
            # left out meanwhile, so each drain is timed whole).
            (batcher,) = on.span_batchers
            batcher.on_poll = None
            drain_cpu = 0
            batch = POLL_SPANS // 2
            for first in range(0, accounted // 2, batch):
                for iteration in range(first, first + batch):
                    with (
                        managed_span(SpanGroup.STEP, "step", on_tracer, iteration=iteration),
                        managed_span(SpanGroup.FORWARD_BACKWARD, "fb", on_tracer),
                    ):
                        pass
                start = time.thread_time_ns()
                recorder.drain()
                drain_cpu += time.thread_time_ns() - start
            drain_ns = drain_cpu / (accounted // batch // 2 * batch * 2)
        finally:
            on.shutdown(timeout_ms=5000)
            off.shutdown(timeout_ms=5000)
            handle.shutdown()
    return {
        "emitting_ratio": emitting.ratio.as_dict(),
        "emitting_on_ns": emitting.candidate_ns.as_dict(),
        "emitting_off_ns": emitting.baseline_ns.as_dict(),
        "collecting_ns_per_span": drain_ns,
    }


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.goodput", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer, shorter samples")
    args = parser.parse_args()
    result = (
        run_goodput(pairs=11, sample_s=0.005, accounted=50_000) if args.quick else (run_goodput())
    )
    ratio = result["emitting_ratio"]
    print(
        f"emitting thread, step span, recorder on / off: {ratio['median']:.3f}x "
        f"(IQR {ratio['p25']:.3f}-{ratio['p75']:.3f}; "
        f"{result['emitting_on_ns']['median']:.0f} ns vs "
        f"{result['emitting_off_ns']['median']:.0f} ns)"
    )
    print(f"collecting thread: {result['collecting_ns_per_span']:.0f} ns per span accounted")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
