"""RL metrics with v0.2.0's signature and the ``rl.*`` names of 0.1.0 and v0.2.0 (the
``LEGACY_RL_*`` constants), so their dashboards keep their data; new code calls
:func:`nemo.lens.instruments.record_rl_step_metrics`."""

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
    """Record RL training metrics (v0.2.0's helper); ``None`` values are skipped, nothing raises.

    Each argument is a gauge of its name under ``rl.`` (``reward_mean`` is
    ``rl.reward.mean``, ``response_length_mean`` ``rl.response_length.mean``,
    ``throughput_tokens_per_sec`` ``rl.throughput.tokens_per_sec`` in {token}/s), but the
    two durations, histograms in ms (``rl.generation.duration_ms``,
    ``rl.rollout.duration_ms``). ``meter=None`` is nemo.lens's meter.

    **Positional caveat:** v0.2.0 inserted ``grad_norm``, ``learning_rate`` and
    ``throughput_tokens_per_sec`` before ``generation_duration_ms``, so a 0.1.0 call passing
    the durations positionally records them as the gradient norm and the learning rate.
    Pass them by keyword, as NeMo-RL does.
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
