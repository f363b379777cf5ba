"""Share one trace across the ranks of a ``torch.distributed`` job.

Rank 0 broadcasts its current context (:func:`broadcast_trace_context`, a collective) and every
rank continues it (:func:`continue_trace`). Contexts travel as bytes in ``uint8`` tensors,
never pickles (:func:`carrier_to_bytes`). Without torch or a process group nothing happens.
"""

from __future__ import annotations

import json
import logging
import struct
from collections.abc import Mapping
from typing import Any, Final

from nemo.lens.propagation import (
    clean_carrier,
    continue_trace,
    create_linked_span,
    inject_context,
)

__all__ = [
    "CONTEXT_BYTES",
    "MAGIC",
    "MIN_CONTEXT_BYTES",
    "broadcast_trace_context",
    "carrier_from_bytes",
    "carrier_to_bytes",
    "continue_trace",
    "create_linked_span",
]

_logger = logging.getLogger(__name__)

MAGIC: Final = b"NLTC"
"""First four bytes of every encoded context ("nemo.lens trace context")."""
_VERSION: Final = 1
_HEADER: Final = struct.Struct(">4sBH")
_MAX_PAYLOAD: Final = 0xFFFF
_MAX_ENCODED: Final = _HEADER.size + _MAX_PAYLOAD

# A traceparent of version 00 is always 55 characters.
_TRACEPARENT_SHAPE: Final = "00-" + "0" * 32 + "-" + "0" * 16 + "-00"

MIN_CONTEXT_BYTES: Final = _HEADER.size + len(
    json.dumps({"traceparent": _TRACEPARENT_SHAPE}, separators=(",", ":")).encode("ascii")
)
"""The smallest ``size=`` accepted: room for the header and a ``traceparent``."""

CONTEXT_BYTES: Final = 512
"""A fixed size that holds a ``traceparent`` with a typical ``tracestate`` and baggage."""

# What to give up first when a fixed size is too small: baggage is the
# application's, tracestate a vendor's; the traceparent is the trace itself.
_DROP_FIRST: Final = ("baggage", "tracestate")


def _payload(carrier: Mapping[str, str]) -> bytes:
    return json.dumps(
        dict(carrier), separators=(",", ":"), sort_keys=True, ensure_ascii=True
    ).encode("ascii")


def _fit(carrier: dict[str, str], room: int) -> bytes:
    """Encode *carrier* in at most *room* payload bytes, dropping what matters least."""
    payload = _payload(carrier)
    if len(payload) <= room:
        return payload
    others = [key for key in sorted(carrier) if key not in ("traceparent", *_DROP_FIRST)]
    dropped: list[str] = []
    for key in (*_DROP_FIRST, *others, "traceparent"):
        if key in carrier:
            del carrier[key]
            dropped.append(key)
            payload = _payload(carrier)
            if len(payload) <= room:
                break
    _logger.warning(
        "nemo.lens: trace context did not fit in %d bytes; dropped %s (use a larger size)",
        room + _HEADER.size,
        ", ".join(dropped),
    )
    return payload


def carrier_to_bytes(carrier: Mapping[str, str], size: int | None = None) -> bytes:
    """Encode a W3C *carrier*: a 7-byte header (:data:`MAGIC`, version 1, the payload's
    length as a big-endian ``uint16``), then the carrier as compact ASCII JSON.

    Without *size* the result is as long as it needs to be; with *size* it is exactly *size*
    bytes, zero-padded, and when the context does not fit baggage is dropped first, then
    ``tracestate``. Entries that are not ``str`` -> ``str`` are left out. Raises
    :class:`ValueError` when *size* is below :data:`MIN_CONTEXT_BYTES`.
    """
    if size is not None:
        if isinstance(size, bool) or not isinstance(size, int):
            raise TypeError(f"size must be an int number of bytes or None, got {size!r}")
        if size < MIN_CONTEXT_BYTES:
            raise ValueError(
                f"size={size} cannot hold a trace context; use at least MIN_CONTEXT_BYTES "
                f"({MIN_CONTEXT_BYTES}), e.g. CONTEXT_BYTES ({CONTEXT_BYTES})"
            )
    room = _MAX_PAYLOAD if size is None else min(_MAX_PAYLOAD, size - _HEADER.size)
    payload = _fit(clean_carrier(carrier), room)
    encoded = _HEADER.pack(MAGIC, _VERSION, len(payload)) + payload
    return encoded if size is None else encoded.ljust(size, b"\0")


def _as_bytes(data: object) -> bytes:
    """The bytes in *data*: a bytes-like object, a list of byte values, or a tensor/array."""
    if isinstance(data, (bytes, bytearray, memoryview)):
        return bytes(data)
    if isinstance(data, (list, tuple)):
        return bytes(data[:_MAX_ENCODED])
    # A tensor or array, on any device: flatten, cut to the longest encoding,
    # and copy the values out (tolist needs neither NumPy nor a host buffer).
    reshape = getattr(data, "reshape", None)
    flat: Any = reshape(-1) if callable(reshape) else data
    values = flat[:_MAX_ENCODED].tolist()
    return bytes(values) if isinstance(values, list) else b""


def carrier_from_bytes(data: object) -> dict[str, str]:
    """Decode what :func:`carrier_to_bytes` produced; ``{}`` for anything else.

    *data* may be ``bytes``, ``bytearray``, ``memoryview``, a list of byte
    values, or a 1-D ``uint8`` tensor or array (on any device). Never raises:
    garbage, truncation, a wrong dtype or a foreign format give ``{}``. Zero
    padding is ignored, and a bare JSON object (the 0.1.0 format) is read too.
    """
    try:
        raw = _as_bytes(data)
        if raw.startswith(MAGIC):
            _, version, length = _HEADER.unpack_from(raw)
            if version != _VERSION or _HEADER.size + length > len(raw):
                return {}
            payload = raw[_HEADER.size : _HEADER.size + length]
        else:
            payload = raw.rstrip(b"\0")
            if not payload.startswith(b"{"):
                return {}
        decoded = json.loads(payload.decode("utf-8"))
    except Exception:  # decoding must never take a training step down
        return {}
    return clean_carrier(decoded)


def _initialised_distributed() -> Any:
    """Return ``torch.distributed`` when a default process group exists, else ``None``."""
    try:
        import torch.distributed as dist
    except ImportError:
        return None
    if not dist.is_available() or not dist.is_initialized():
        return None
    return dist


def _collective_device(dist: Any, group: Any) -> str:
    """Where a tensor must live for a collective of *group*: NCCL moves only CUDA tensors;
    gloo, MPI and mixed ``"cpu:gloo,cuda:nccl"`` groups take CPU ones."""
    backend = str(dist.get_backend(group)).lower()
    if "nccl" in backend and "cpu:" not in backend:
        import torch

        return f"cuda:{torch.cuda.current_device()}"
    return "cpu"


def broadcast_trace_context(
    rank: int, src_rank: int = 0, group: Any = None, device: Any = None
) -> dict[str, str] | None:
    """Broadcast *src_rank*'s current trace context to every rank (a collective).

    Every rank of *group* (default: the whole job) must call it. Returns the W3C carrier on
    every rank -- pass it to :func:`continue_trace` -- or ``None`` on every rank when torch
    is not installed or the process group is not initialised; the carrier is empty when the
    source rank had no span.

    *rank* and *src_rank* are global ranks. When *rank* disagrees with the process group (a
    local rank passed by mistake), the group's answer is used, with a warning: two ranks
    that both believe they are the source would hang the collective.

    Two broadcasts of small tensors (length, then bytes), on *device*: by default the
    current CUDA device under NCCL (select it with ``torch.cuda.set_device`` first), else
    the CPU.
    """
    dist = _initialised_distributed()
    if dist is None:
        return None
    import torch

    actual = int(dist.get_rank())
    if actual != rank:
        _logger.warning(
            "nemo.lens: broadcast_trace_context(rank=%d) called on global rank %d; "
            "using %d (pass the global rank, not the local one)",
            rank,
            actual,
            actual,
        )
    where = _collective_device(dist, group) if device is None else device
    encoded = carrier_to_bytes(inject_context()) if actual == src_rank else b""
    length = torch.tensor([len(encoded)], dtype=torch.int64, device=where)
    dist.broadcast(length, src=src_rank, group=group)
    size = int(length.item())
    if actual == src_rank:
        data = torch.tensor(list(encoded), dtype=torch.uint8, device=where)
    else:
        data = torch.zeros(size, dtype=torch.uint8, device=where)
    dist.broadcast(data, src=src_rank, group=group)
    return carrier_from_bytes(data)
