"""What the batch span processor reports when it loses a span, and why, in its words.

Each loss is counted in the pipeline's
:class:`~nemo.lens._sdk.exporters.health.ExportHealth` under a short reason; the
first of each reason is explained once, as a warning (see
:mod:`nemo.lens._sdk.batching` for when each happens).
"""

from __future__ import annotations

from nemo.lens._sdk.exporters.health import ExportHealth

__all__ = ["report_dropped", "report_late"]


def report_late(health: ExportHealth, destination: str) -> None:
    """A span ended after shutdown's last drain began: not exported, counted."""
    health.dropped(
        "traces",
        1,
        "ended after shutdown",
        "nemo.lens: a span ended after its telemetry was shut down (a thread still "
        "emitting during shutdown or re-initialisation); it was not exported. Such spans "
        "are counted.",
        destination,
    )


def report_dropped(
    health: ExportHealth,
    *,
    stalled: bool,
    destination: str,
    stall_timeout_millis: float,
    max_queue_size: int,
) -> None:
    """A span met a full queue and was dropped: the exporter *stalled*, or too slow."""
    if stalled:
        reason = "exporter stalled"
        explanation = (
            f"nemo.lens: the span exporter ({destination}) has not finished a batch "
            f"in {stall_timeout_millis:g} ms and its queue is full; dropping spans "
            "instead of holding the job up, until it writes again (a hung file system?). "
            "The total is reported at shutdown."
        )
    else:
        reason = "queue full"
        explanation = (
            f"nemo.lens: the span queue is full ({max_queue_size} spans) because "
            f"export to {destination} is failing or slower than the job; dropping "
            "spans until it catches up. The total is reported at shutdown."
        )
    health.dropped("traces", 1, reason, explanation, destination)
