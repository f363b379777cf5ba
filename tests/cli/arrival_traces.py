"""Synchronous traces for the arrival tests: every rank's steps equally long, as a gradient
all-reduce makes them, and only when each rank starts them differs.

Per iteration ``i`` (from 1) each rank's step starts at ``(i - 1) * PERIOD_MS`` plus its
offset and lasts :data:`STEP_MS`; an optimizer span without an iteration of its own starts
:data:`OPTIMIZER_AT_MS` into the step and lasts :data:`OPTIMIZER_MS`. Group names come
from the generated classes."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Final

from nemo.lens import semconv
from nemo.lens.groups import SpanGroup

from .conftest import line, span_dict, write_lines

__all__ = ["ITERATIONS", "OPTIMIZER_MS", "RANKS", "STEP_MS", "late_rank", "rotating", "write"]

RANKS: Final = 4
ITERATIONS: Final = 10
PERIOD_MS: Final = 100
STEP_MS: Final = 80
OPTIMIZER_AT_MS: Final = 60
OPTIMIZER_MS: Final = 15
NODES: Final = ("node-a", "node-a", "node-b", "node-b")
"""Each rank's ``host.name``."""

Offset = Callable[[int, int], float]
"""(rank, iteration) -> how many ms after the iteration's start the rank starts its step."""


def late_rank(rank: int, iteration: int) -> float:
    """Rank 2 is 7 ms late at every iteration; the others within 2 ms of each other."""
    return (0.0, 1.0, 7.0, 2.0)[rank]


def rotating(rank: int, iteration: int) -> float:
    """A different rank is 5 ms late at each iteration: rank ``iteration % 4``."""
    return 5.0 if rank == iteration % RANKS else 0.0


def write(path: Path, offset: Offset, *, run: str = "sync") -> Path:
    """Write the trace: per rank and iteration a step and its optimizer span."""
    lines = []
    for rank in range(RANKS):
        for iteration in range(1, ITERATIONS + 1):
            start = (iteration - 1) * PERIOD_MS + offset(rank, iteration)
            spans = (
                span_dict(
                    "train.step",
                    start_ms=start,
                    end_ms=start + STEP_MS,
                    group=SpanGroup.STEP,
                    rank=rank,
                    run=run,
                    span_id=f"{rank:04x}{iteration:08x}0001",
                    attributes={"iteration": iteration, semconv.SPAN_CATEGORY: "goodput"},
                ),
                span_dict(
                    "train.optimizer",
                    start_ms=start + OPTIMIZER_AT_MS,
                    end_ms=start + OPTIMIZER_AT_MS + OPTIMIZER_MS,
                    group=SpanGroup.OPTIMIZER,
                    rank=rank,
                    run=run,
                    span_id=f"{rank:04x}{iteration:08x}0002",
                    parent=f"{rank:04x}{iteration:08x}0001",
                ),
            )
            for span in spans:
                span["resource"][semconv.HOST_NAME] = NODES[rank]
                lines.append(line(span))
    return write_lines(path, lines)
