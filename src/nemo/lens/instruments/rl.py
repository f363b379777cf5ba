"""RL metrics with 0.1.0's signature and names (``nemo.lens.instruments.rl``).

:func:`record_rl_metrics` records under 0.1.0's ``rl.*`` names (the ``LEGACY_RL_*``
constants of :mod:`nemo.lens.semconv`), so dashboards built on 0.1.0 keep their
data. New code records a step with
:func:`nemo.lens.instruments.record_rl_step_metrics` (``nemo.rl.*``, seconds,
reward statistics and throughput).
"""

from __future__ import annotations

from opentelemetry import metrics

from nemo.lens import semconv as sc
from nemo.lens.instruments import _recording

__all__ = ["record_rl_metrics"]


def record_rl_metrics(
    meter: metrics.Meter | None,
    reward_mean: float | None = None,
    kl_divergence: float | None = None,
    policy_loss: float | None = None,
    value_loss: float | None = None,
    entropy: float | None = None,
    response_length_mean: float | None = None,
    generation_duration_ms: float | None = None,
    rollout_duration_ms: float | None = None,
) -> None:
    """Record RL training metrics (0.1.0's helper); ``None`` values are skipped.

    ================================ ====================================== ==========
    argument                         metric                                 kind, unit
    ================================ ====================================== ==========
    ``reward_mean``                  ``rl.reward.mean``                     gauge
    ``kl_divergence``                ``rl.kl_divergence``                   gauge
    ``policy_loss``                  ``rl.policy_loss``                     gauge
    ``value_loss``                   ``rl.value_loss``                      gauge
    ``entropy``                      ``rl.entropy``                         gauge
    ``response_length_mean``         ``rl.response_length.mean``            gauge
    ``generation_duration_ms``       ``rl.generation.duration_ms``          histogram, ms
    ``rollout_duration_ms``          ``rl.rollout.duration_ms``             histogram, ms
    ================================ ====================================== ==========

    Instruments are created once per meter; ``meter=None`` is nemo.lens's
    meter. Never raises: a value that is not a finite number (or a negative
    duration or length) is skipped and logged once.
    """
    _recording.record_each(
        meter,
        (
            (sc.LEGACY_RL_REWARD_MEAN, reward_mean),
            (sc.LEGACY_RL_KL_DIVERGENCE, kl_divergence),
            (sc.LEGACY_RL_POLICY_LOSS, policy_loss),
            (sc.LEGACY_RL_VALUE_LOSS, value_loss),
            (sc.LEGACY_RL_ENTROPY, entropy),
            (sc.LEGACY_RL_RESPONSE_LENGTH_MEAN, response_length_mean),
            (sc.LEGACY_RL_GENERATION_DURATION_MS, generation_duration_ms),
            (sc.LEGACY_RL_ROLLOUT_DURATION_MS, rollout_duration_ms),
        ),
    )
