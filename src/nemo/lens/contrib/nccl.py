"""Trace context as bytes or a ``uint8`` tensor, for transports that move only tensors.

Pipeline stages send it beside their activations (``dist.send(context_to_tensor(...))``) and
link to it (``create_linked_span(name, context_from_bytes(buffer))``). The bytes are
:mod:`nemo.lens.distributed`'s wire format; decoding never raises.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from opentelemetry import context as otel_context
from opentelemetry.context import Context

from nemo.lens.contrib._extras import import_extra
from nemo.lens.distributed import (
    CONTEXT_BYTES,
    MAGIC,
    MIN_CONTEXT_BYTES,
    carrier_from_bytes,
    carrier_to_bytes,
)
from nemo.lens.propagation import extract_context, inject_context

if TYPE_CHECKING:
    import torch

__all__ = [
    "CONTEXT_BYTES",
    "MAGIC",
    "MIN_CONTEXT_BYTES",
    "carrier_from_bytes",
    "carrier_to_bytes",
    "context_from_bytes",
    "context_to_bytes",
    "context_to_tensor",
    "deserialize_context",
    "extract_nccl_context",
    "serialize_context",
]


def context_to_bytes(context: Context | None = None, size: int | None = None) -> bytes:
    """Encode the current (or the given) trace context and baggage, in exactly *size* bytes
    when given (see :func:`nemo.lens.distributed.carrier_to_bytes`)."""
    return carrier_to_bytes(inject_context(context=context), size)


def context_from_bytes(data: object, context: Context | None = None) -> Context:
    """Return *context* (default: an empty one) with the remote span *data* encodes (bytes, a
    list of byte values or a ``uint8`` tensor on any device). Never raises."""
    return extract_context(carrier_from_bytes(data), context)


def context_to_tensor(
    context: Context | None = None, size: int = CONTEXT_BYTES, device: Any = None
) -> torch.Tensor:
    """Return ``context_to_bytes(context, size)`` as a 1-D ``torch.uint8`` tensor.

    *device* is where the tensor is made (``"cuda"`` for NCCL; default CPU).
    Raises :class:`~nemo.lens.contrib.MissingExtraError` without torch.
    """
    torch_module = import_extra("torch", extra="torch", feature="context_to_tensor()")
    encoded = context_to_bytes(context, size)
    # From a list, not a buffer: torch.frombuffer warns on read-only bytes, and
    # the NumPy route is not available in every torch install.
    tensor: torch.Tensor = torch_module.tensor(list(encoded), dtype=torch_module.uint8)
    return tensor if device is None else tensor.to(device)


def serialize_context() -> bytes:
    """The current context as 0.1.0 encoded it: the W3C carrier as bare JSON (which
    :func:`context_from_bytes` reads too; for a fixed size use :func:`context_to_bytes`)."""
    return json.dumps(inject_context(), separators=(",", ":"), sort_keys=True).encode()


def deserialize_context(data: object) -> dict[str, str] | None:
    """The 0.1.0 name of :func:`carrier_from_bytes`, returning ``None`` when nothing decoded."""
    return carrier_from_bytes(data) or None


def extract_nccl_context(data: object) -> Context:
    """The 0.1.0 helper: the current context, continued from *data* when it names a span."""
    return context_from_bytes(data, otel_context.get_current())
