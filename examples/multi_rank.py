"""Several ranks, one trace: a runnable multi-rank example on the CPU (gloo backend).

    python examples/multi_rank.py --world-size 3                  # starts 3 ranks itself
    torchrun --standalone --nproc-per-node=3 examples/multi_rank.py

Needs torch (``pip install 'nemo-lens[torch]'``). Each rank writes its spans to
``traces/multi-rank-<run id>-rank<r>.jsonl`` (``--out`` changes the directory):

* rank 0 opens the ``train.job`` span and broadcasts its context; every rank's
  ``train.step`` spans are its children, so the whole job is one trace;
* in each step, rank r's ``pipeline.stage`` span is linked to rank r - 1's, whose
  context travels as a small uint8 tensor through ``dist.send`` / ``dist.recv``,
  the way activations do in pipeline parallelism.

torchrun needs ``--standalone`` (or a rendezvous id) so that every rank sees the
same ``TORCHELASTIC_RUN_ID`` and the ranks agree on the run id.
"""

from __future__ import annotations

import argparse
import datetime
import os
import socket
from contextlib import AbstractContextManager, nullcontext

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
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


def pipeline_stage(rank: int, world_size: int, step: int) -> None:
    """Receive the previous stage's context, link to it, pass ours on."""
    previous = None
    if rank > 0:
        buffer = torch.empty(CONTEXT_BYTES, dtype=torch.uint8)
        dist.recv(buffer, src=rank - 1)  # in a real job: next to the activations
        previous = context_from_bytes(buffer)
    stage = create_linked_span("pipeline.stage", previous, stage=rank, iteration=step)
    with trace.use_span(stage, end_on_exit=True):
        if rank < world_size - 1:
            dist.send(context_to_tensor(), dst=rank + 1)


def train(rank: int, world_size: int, out: str, run_id: str, steps: int) -> None:
    """One rank of the job: MASTER_ADDR and MASTER_PORT must be set."""
    dist.init_process_group(
        "gloo", rank=rank, world_size=world_size, timeout=datetime.timedelta(seconds=60)
    )
    config = NemoLensConfig(
        enabled=True,
        service_name="multi-rank",
        exporter="file",
        export_strategy="all_ranks",  # every rank writes its own file
        span_groups="per_step",
        metrics_enabled=False,
        run_id=run_id,  # "" picks SLURM_JOB_ID or TORCHELASTIC_RUN_ID
        trace_file=os.path.join(out, "{service_name}-{run_id}-rank{rank}.jsonl"),
    )
    handle = setup_telemetry(config, rank=rank, world_size=world_size)
    try:
        # Only rank 0 has a job span; the broadcast makes it everyone's parent.
        job: AbstractContextManager[object] = (
            managed_span(SpanGroup.JOB, "train.job", world_size=world_size)
            if rank == 0
            else nullcontext()
        )
        with job:
            carrier = broadcast_trace_context(rank)  # every rank calls it
            with continue_trace(carrier):
                for step in range(steps):
                    with managed_span(SpanGroup.STEP, "train.step", iteration=step):
                        pipeline_stage(rank, world_size, step)
                        loss = torch.tensor([float(rank + step)])
                        dist.all_reduce(loss)
        dist.barrier()
        if rank == 0:
            print(f"run {handle.config.run_id}: traces in {os.path.abspath(out)}")
    finally:
        handle.shutdown()
        dist.destroy_process_group()


def _spawned(rank: int, world_size: int, port: int, out: str, run_id: str, steps: int) -> None:
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    train(rank, world_size, out, run_id, steps)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--world-size", type=int, default=2, help="ranks to start (default 2)")
    parser.add_argument("--steps", type=int, default=3, help="training steps (default 3)")
    parser.add_argument("--out", default="traces", help="directory for the trace files")
    args = parser.parse_args()
    if "RANK" in os.environ:  # started by torchrun: this process is one rank
        rank, world_size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
        train(rank, world_size, args.out, "", args.steps)
        return
    # Started by hand: start the ranks, sharing one run id chosen here.
    run_id = NemoLensConfig().resolved().run_id
    spawn_args = (args.world_size, _free_port(), args.out, run_id, args.steps)
    # torch.multiprocessing.spawn has no type annotations.
    mp.spawn(_spawned, args=spawn_args, nprocs=args.world_size, join=True)  # type: ignore[attr-defined,no-untyped-call,unused-ignore]


if __name__ == "__main__":
    main()
