"""Share one trace across the ranks of a ``torch.distributed`` job.

torch is optional: without it, or before the process group is initialised, the
functions here return ``None`` and the job runs on untouched.
"""

from __future__ import annotations

from typing import Any

from nemo.lens.propagation import inject_context

__all__ = ["broadcast_trace_context"]


def _process_group_ready() -> Any:
    try:
        import torch.distributed as dist
    except ImportError:
        return None
    if not dist.is_available() or not dist.is_initialized():
        return None
    return dist


def broadcast_trace_context(rank: int, src_rank: int = 0) -> dict[str, str] | None:
    """Broadcast *src_rank*'s current trace context to every rank (a collective).

    Every rank must call it, as with any collective. Returns the W3C carrier on
    every rank (pass it to :func:`nemo.lens.extract_context` to parent spans under
    the source rank's span), or ``None`` when torch or the process group is
    absent.
    """
    dist = _process_group_ready()
    if dist is None:
        return None
    payload: list[dict[str, str] | None] = [dict(inject_context()) if rank == src_rank else None]
    dist.broadcast_object_list(payload, src=src_rank)
    received = payload[0]
    return dict(received) if isinstance(received, dict) else {}
