"""One rank of the multi-rank trace test; started by test_multi_rank.py, never by pytest.

Usage: python _rank_worker.py OUT_DIR RUN_ID, with RANK, WORLD_SIZE, MASTER_ADDR and
MASTER_PORT in the environment. Writes OUT_DIR/rank{RANK}.jsonl with:

* on rank 0, a ``train.job`` span whose context is broadcast to every rank;
* on every rank, STEPS ``train.step`` spans continued from that context;
* in each step, a ``pipeline.stage`` span that rank r > 0 links to rank r - 1's stage
  span, whose context arrives as a uint8 tensor through dist.send / dist.recv.
"""

from __future__ import annotations

import datetime
import os
import sys
from contextlib import AbstractContextManager, nullcontext

import torch
import torch.distributed as dist
from opentelemetry import trace

from nemo.lens import (
    NemoLensConfig,
    broadcast_trace_context,
    create_linked_span,
    managed_span,
    setup_telemetry,
)
from nemo.lens.contrib.nccl import CONTEXT_BYTES, context_from_bytes, context_to_tensor
from nemo.lens.groups import SpanGroup
from nemo.lens.propagation import continue_trace

STEPS = 2
# A peer that died must not leave the others blocked past the test's own deadline.
COLLECTIVE_TIMEOUT = datetime.timedelta(seconds=30)


def pipeline_stage(rank: int, world_size: int, step: int) -> None:
    remote = None
    if rank > 0:
        buffer = torch.empty(CONTEXT_BYTES, dtype=torch.uint8)
        dist.recv(buffer, src=rank - 1)
        remote = context_from_bytes(buffer)
    span = create_linked_span("pipeline.stage", remote, stage=rank, iteration=step)
    with trace.use_span(span, end_on_exit=True):
        if rank < world_size - 1:
            dist.send(context_to_tensor(), dst=rank + 1)


def main() -> None:
    out_dir, run_id = sys.argv[1], sys.argv[2]
    rank, world_size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    dist.init_process_group("gloo", rank=rank, world_size=world_size, timeout=COLLECTIVE_TIMEOUT)
    config = NemoLensConfig(
        enabled=True,
        exporter="file",
        export_strategy="all_ranks",
        span_groups="per_step",
        metrics_enabled=False,
        run_id=run_id,
        trace_file=os.path.join(out_dir, "rank{rank}.jsonl"),
    )
    handle = setup_telemetry(config, rank=rank, world_size=world_size)
    try:
        job: AbstractContextManager[object] = (
            managed_span(SpanGroup.JOB, "train.job") if rank == 0 else nullcontext()
        )
        with job:
            carrier = broadcast_trace_context(rank)
            with continue_trace(carrier):
                for step in range(STEPS):
                    with managed_span(SpanGroup.STEP, "train.step", iteration=step):
                        pipeline_stage(rank, world_size, step)
        dist.barrier()
    finally:
        handle.shutdown()
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
