"""Gym metrics with 0.1.0's signature and ``gym.*`` names (the ``LEGACY_GYM_*`` constants), so
0.1.0's dashboards keep their data; new code calls :func:`record_gym_rollout_metrics`."""

from __future__ import annotations

from opentelemetry import metrics

from nemo.lens import semconv as sc
from nemo.lens.instruments import _recording

__all__ = ["record_gym_metrics"]


def record_gym_metrics(
    meter: metrics.Meter | None,
    server_request_duration_ms: float | None = None,
    rollout_duration_ms: float | None = None,
    verify_duration_ms: float | None = None,
    verify_success_rate: float | None = None,
    active_servers: int | None = None,
) -> None:
    """Record Gym metrics (0.1.0's helper); ``None`` values are skipped, nothing raises.

    The three durations are histograms in ms (``gym.server.request_duration_ms``,
    ``gym.rollout.duration_ms``, ``gym.verify.duration_ms``); ``gym.verify.success_rate``
    and ``gym.servers.active`` are gauges. ``meter=None`` is nemo.lens's meter.
    """
    _recording.record_each(
        meter,
        (
            (sc.LEGACY_GYM_SERVER_REQUEST_DURATION_MS, server_request_duration_ms),
            (sc.LEGACY_GYM_ROLLOUT_DURATION_MS, rollout_duration_ms),
            (sc.LEGACY_GYM_VERIFY_DURATION_MS, verify_duration_ms),
            (sc.LEGACY_GYM_VERIFY_SUCCESS_RATE, verify_success_rate),
            (sc.LEGACY_GYM_SERVERS_ACTIVE, active_servers),
        ),
    )
