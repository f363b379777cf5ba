"""RL metrics with upstream v0.2.0's signature and 0.1.0's names (``nemo.lens.instruments.rl``).

:func:`record_rl_metrics` records under the ``rl.*`` names of 0.1.0 and v0.2.0
(the ``LEGACY_RL_*`` constants of :mod:`nemo.lens.semconv`), so dashboards built
on either keep their data. New code records a step with
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
    grad_norm: float | None = None,
    learning_rate: float | None = None,
    throughput_tokens_per_sec: float | None = None,
    generation_duration_ms: float | None = None,
    rollout_duration_ms: float | None = None,
) -> None:
    """Record RL training metrics (v0.2.0's helper); ``None`` values are skipped.

    ================================ ====================================== ================
    argument                         metric                                 kind, unit
    ================================ ====================================== ================
    ``reward_mean``                  ``rl.reward.mean``                     gauge
    ``kl_divergence``                ``rl.kl_divergence``                   gauge
    ``policy_loss``                  ``rl.policy_loss``                     gauge
    ``value_loss``                   ``rl.value_loss``                      gauge
    ``entropy``                      ``rl.entropy``                         gauge
    ``response_length_mean``         ``rl.response_length.mean``            gauge
    ``grad_norm``                    ``rl.grad_norm``                       gauge
    ``learning_rate``                ``rl.learning_rate``                   gauge
    ``throughput_tokens_per_sec``    ``rl.throughput.tokens_per_sec``       gauge, {token}/s
    ``generation_duration_ms``       ``rl.generation.duration_ms``          histogram, ms
    ``rollout_duration_ms``          ``rl.rollout.duration_ms``             histogram, ms
    ================================ ====================================== ================

    The parameters are v0.2.0's, in v0.2.0's order. **Positional caveat:**
    v0.2.0 inserted ``grad_norm``, ``learning_rate`` and
    ``throughput_tokens_per_sec`` before ``generation_duration_ms``, so a call
    written for 0.1.0 that passes the two durations positionally (the 8th and
    9th arguments) now records them as the gradient norm and the learning
    rate. Pass the durations by keyword, as NeMo-RL does (it filters its
    keyword arguments by this signature).

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
            (sc.LEGACY_RL_GRAD_NORM, grad_norm),
            (sc.LEGACY_RL_LEARNING_RATE, learning_rate),
            (sc.LEGACY_RL_THROUGHPUT_TOKENS_PER_SEC, throughput_tokens_per_sec),
            (sc.LEGACY_RL_GENERATION_DURATION_MS, generation_duration_ms),
            (sc.LEGACY_RL_ROLLOUT_DURATION_MS, rollout_duration_ms),
        ),
    )
