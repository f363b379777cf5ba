"""What 0.1.0's ``detect_local()`` reported about this process: host, pid and GPU count."""

from __future__ import annotations

import os
import socket

from opentelemetry.util.types import AttributeValue

from nemo.lens import semconv
from nemo.lens.resources.detect import gpu_count

__all__ = ["detect_local"]


def detect_local() -> dict[str, AttributeValue]:
    """Return ``host.name``, ``process.pid`` and, when known, ``host.gpu.count``
    (:func:`nemo.lens.resources.detect.gpu_count`)."""
    found: dict[str, AttributeValue] = {
        semconv.HOST_NAME: socket.gethostname(),
        semconv.PROCESS_PID: os.getpid(),
    }
    gpus = gpu_count()
    if gpus is not None:
        found[semconv.HOST_GPU_COUNT] = gpus
    return found
