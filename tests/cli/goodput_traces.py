"""Traces at known times, written by the real exporter: what the goodput and report tests read.

Spans are emitted with ``emit_span`` through a real ``setup_telemetry`` (the
``file`` exporter), one set-up per process lifetime, so each lifetime carries
its own ``nemo.lifetime.id`` as a resumed job's would. Group names come from
the generated classes; times are whole seconds after :data:`T0`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from nemo.lens import NemoLensConfig, emit_span, setup_telemetry
from nemo.lens.consumers.megatron import MegatronSpanGroup
from nemo.lens.groups import SpanGroup

from .conftest import line, span_dict

Figures = dict[str, Any]

T0 = 1_700_000_000
"""The epoch second every test trace starts at."""


@dataclass(frozen=True)
class Span:
    """One span to emit: group, start and end (seconds after T0), attributes."""

    group: str
    start: float
    end: float
    attributes: dict[str, Any] = field(default_factory=dict)
    name: str = ""


def emit_lifetime(
    path: Path,
    spans: Sequence[Span],
    *,
    rank: int = 0,
    world_size: int = 2,
    run_id: str = "run1",
    span_group_cls: Any = SpanGroup,
) -> Path:
    """Emit ``spans`` as one process lifetime of ``rank``, appending to ``path``."""
    config = NemoLensConfig(
        enabled=True,
        exporter="file",
        span_groups="all",
        span_group_cls=span_group_cls,
        metrics_enabled=False,
        export_strategy="all_ranks",
        run_id=run_id,
        trace_file=str(path),
    )
    handle = setup_telemetry(config, rank=rank, world_size=world_size, _allow_reinit=True)
    try:
        for span in spans:
            emit_span(
                handle.tracer,
                span.name or f"train.{span.group}",
                f"{T0 + span.start}",
                f"{T0 + span.end}",
                group=span.group,
                attributes=span.attributes,
            )
    finally:
        handle.shutdown()
    return path


def step(iteration: int, start: float, end: float, attribute: str = "iteration") -> Span:
    """A step span of ``iteration``, the number in the attribute named ``attribute``."""
    return Span(SpanGroup.STEP, start, end, {attribute: iteration})


def crashed_lifetime(crash_at: float = 45, *, step_attribute: str = "iteration") -> list[Span]:
    """Lifetime A: set-up 0-10, steps 1-4 (an evaluation and a checkpoint after step 2),
    and a crash during step 4 at ``crash_at``, which ends the spans still open."""
    return [
        Span(SpanGroup.JOB, 0, crash_at),
        Span(SpanGroup.MODEL_INIT, 0, 6),
        Span(SpanGroup.LOAD_CHECKPOINT, 6, 10),
        step(1, 10, 20, step_attribute),
        Span(SpanGroup.FORWARD_BACKWARD, 11, 18),  # profiling detail: transparent
        step(2, 20, 26, step_attribute),
        Span(SpanGroup.EVALUATE, 26, 28),
        Span(SpanGroup.CHECKPOINT, 28, 30),
        step(3, 30, 40, step_attribute),
        step(4, 40, crash_at, step_attribute),
    ]


def resumed_lifetime(
    start: float, step4_end: float, job_end: float, *, step_attribute: str = "iteration"
) -> list[Span]:
    """Lifetime B: set-up (5 s), steps 3 and 4 again (10 s, then to ``step4_end``, with a
    2 s checkpoint inside step 4), and the job's end at ``job_end``."""
    return [
        Span(SpanGroup.JOB, start, job_end),
        Span(SpanGroup.MODEL_INIT, start, start + 3),
        Span(SpanGroup.LOAD_CHECKPOINT, start + 3, start + 5),
        step(3, start + 5, start + 15, step_attribute),
        step(4, start + 15, step4_end, step_attribute),
        Span(SpanGroup.CHECKPOINT, start + 20, start + 22),  # inside step 4: checkpoint time
    ]


def crash_and_resume(directory: Path, *, step_attribute: str = "iteration") -> list[Path]:
    """Two ranks of run ``run1`` that crashed at 45 s and resumed.

    Rank 0 appends both lifetimes to one file (the file exporter's append mode);
    rank 1 writes one file per lifetime. Rank 0 resumes at 60 and ends at 92;
    rank 1 resumes at 62, ends at 90, and trains a second less: it bounds the run.
    """
    rank0 = directory / "run1-rank0.jsonl"
    emit_lifetime(rank0, crashed_lifetime(step_attribute=step_attribute), rank=0)
    emit_lifetime(rank0, resumed_lifetime(60, 85, 92, step_attribute=step_attribute), rank=0)
    first = directory / "run1-rank1.a.jsonl"
    second = directory / "run1-rank1.b.jsonl"
    emit_lifetime(first, crashed_lifetime(step_attribute=step_attribute), rank=1)
    emit_lifetime(second, resumed_lifetime(62, 86, 90, step_attribute=step_attribute), rank=1)
    return [rank0, first, second]


NO_NEW_BADPUT: Final = {"data_loading": 0, "startup": 0, "recovery": 0, "anomalous_steps": 0}
"""The crash and resume has none: each lifetime's set-up spans reach its first step."""
RANK0: Figures = {
    "wall_s": 92.0,
    "productive_s": 10 + 6 + 10 + 8,  # steps 1, 2 of A; 3, and 4 less its checkpoint, of B
    "badput": {
        "initialization": 10 + 5,
        "checkpoint_save": 2 + 2,
        "evaluation": 2,
        "wasted_progress": 10 + 5,  # steps 3 and 4 of A, executed again in B
        "restart": 60 - 45,
        "unaccounted": 92 - 85,  # B's job after its last step
        **NO_NEW_BADPUT,
    },
    "lifetimes": 2,
    # Counted steps 10, 6, 10, 8 s: median 9, MAD 1, none over 12; ideal 34 / 4.
    "steps": {"counted": 4, "anomalous": 0, "ideal_s": 8.5, "deviation_s": 1.5},
}
RANK1: Figures = {
    "wall_s": 90.0,
    "productive_s": 10 + 6 + 10 + 7,
    "badput": {
        "initialization": 15,
        "checkpoint_save": 4,
        "evaluation": 2,
        "wasted_progress": 15,
        "restart": 62 - 45,
        "unaccounted": 90 - 86,
        **NO_NEW_BADPUT,
    },
    "lifetimes": 2,
    # 10, 6, 10, 7 s: median 8.5, MAD 1.5; deviations 1.75, 2.25, 1.75, 1.25.
    "steps": {"counted": 4, "anomalous": 0, "ideal_s": 8.25, "deviation_s": 1.75},
}
RUN: Figures = {
    "wall_s": 92.0,  # rank 0's end
    "productive_s": RANK1["productive_s"],  # rank 1 bounds the run
    "badput": {**RANK1["badput"], "unaccounted": 4 + (92 - 90)},  # and did nothing 90-92
    "lifetimes": 2,
    "steps": RANK1["steps"],
}


def disrupted_megatron_run(path: Path) -> Path:
    """One Megatron rank, ``run2``, with every bucket at known times.

    Lifetime A: the job 0-80, model_init 1-3, steps 1-5 from 5 s, each waiting 1 s for
    its batch (``data_loading`` inside the step), the fifth taking 30 s, then step 6
    from 75 until a crash at 80. Lifetime B: the job 90-120, load_checkpoint 92-95,
    step 6 again 100-110 (its batch 100-101).
    """
    group = MegatronSpanGroup
    starts = [5, 15, 25, 35, 45]
    ends = [15, 25, 35, 45, 75]
    crashed = [Span(group.JOB, 0, 80), Span(group.MODEL_INIT, 1, 3)]
    for i, (start, end) in enumerate(zip(starts, ends, strict=True), 1):
        crashed += [step(i, start, end), Span(group.DATA_LOADING, start, start + 1)]
    crashed += [step(6, 75, 80), Span(group.DATA_LOADING, 75, 76)]
    resumed = [
        Span(group.JOB, 90, 120),
        Span(group.LOAD_CHECKPOINT, 92, 95),
        step(6, 100, 110),
        Span(group.DATA_LOADING, 100, 101),
    ]
    emit_lifetime(path, crashed, run_id="run2", span_group_cls=group)
    return emit_lifetime(path, resumed, run_id="run2", span_group_cls=group)


DISRUPTED: Figures = {
    "wall_s": 120.0,
    # Counted steps' own time: 9, 9, 9, 9, 29 (A) and 9 (B); less the anomalous excess.
    "productive_s": 74 - 20,
    "badput": {
        "initialization": 2 + 3,
        "checkpoint_save": 0,
        "evaluation": 0,
        "data_loading": 5 + 1 + 1,  # A's six batches, B's one
        "startup": 1 + 2,  # A: 0-1 and 3-5
        "recovery": 2 + 5,  # B: 90-92 and 95-100
        # Median 9, MAD 0: the 29 s step is anomalous, 20 s over the ideal of 9.
        "anomalous_steps": 20,
        "wasted_progress": 4,  # A's step 6 less its batch
        "restart": 10,  # 80-90
        "unaccounted": 10,  # B after its step
    },
    "lifetimes": 2,
    # Fewer than 100 steps: the mean deviation, (0 * 5 + 20) / 6.
    "steps": {"counted": 6, "anomalous": 1, "ideal_s": 9.0, "deviation_s": 3.333333333},
}


def write_big_trace(path: Path, spans: int, ranks: int = 4) -> int:
    """A trace of ``spans`` hand-made spans: per rank a job, steps with two children each.

    Every rank's steps take 10 ms but rank 2's, which take 13 ms from iteration 500
    on: a straggler, for the chart to show. Returns the number of iterations.
    """
    per_rank = spans // ranks
    iterations = (per_rank - 1) // 3
    with path.open("w", encoding="utf-8") as stream:
        for rank in range(ranks):
            stream.write(
                line(
                    span_dict(
                        "train.job",
                        start_ms=0,
                        end_ms=iterations * 14,
                        group=SpanGroup.JOB,
                        rank=rank,
                    )
                )
                + "\n"
            )
            for i in range(iterations):
                start = i * 14
                length = 13 if rank == 2 and i >= 500 else 10
                for name, group, a, b in (
                    ("train.step", SpanGroup.STEP, start, start + length),
                    ("train.forward_backward", SpanGroup.FORWARD_BACKWARD, start, start + 6),
                    ("train.optimizer", SpanGroup.OPTIMIZER, start + 6, start + 8),
                ):
                    record = span_dict(
                        name,
                        start_ms=a,
                        end_ms=b,
                        group=group,
                        rank=rank,
                        attributes={"iteration": i + 1},
                    )
                    stream.write(line(record) + "\n")
    return iterations
