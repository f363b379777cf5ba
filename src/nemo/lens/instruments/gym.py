"""Gym metrics with 0.1.0's signature and names (``nemo.lens.instruments.gym``).

:func:`record_gym_metrics` records under 0.1.0's ``gym.*`` names (the
``LEGACY_GYM_*`` constants of :mod:`nemo.lens.semconv`), so dashboards built on
0.1.0 keep their data. New code records each finished rollout with
:func:`nemo.lens.instruments.record_gym_rollout_metrics` (``nemo.gym.*``).
"""

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
    """Record Gym metrics (0.1.0's helper); ``None`` values are skipped.

    ================================ ====================================== ==========
    argument                         metric                                 kind, unit
    ================================ ====================================== ==========
    ``server_request_duration_ms``   ``gym.server.request_duration_ms``     histogram, ms
    ``rollout_duration_ms``          ``gym.rollout.duration_ms``            histogram, ms
    ``verify_duration_ms``           ``gym.verify.duration_ms``             histogram, ms
    ``verify_success_rate``          ``gym.verify.success_rate``            gauge
    ``active_servers``               ``gym.servers.active``                 gauge
    ================================ ====================================== ==========

    Instruments are created once per meter; ``meter=None`` is nemo.lens's
    meter. Never raises: a value that is not a finite, non-negative number is
    skipped and logged once.
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
