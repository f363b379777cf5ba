"""Metric helpers: one call records a unit of work's numbers under fixed names.

:func:`record_inference_metrics` (GenAI conventions), :func:`record_rl_step_metrics`
(``nemo.rl.*``), :func:`record_gym_rollout_metrics` (``nemo.gym.*``), and 0.1.0's helpers in
the submodules ``inference``, ``rl`` and ``gym``. ``None`` means "not measured"; a bad value
is skipped and logged once; nothing raises (``docs/metrics-and-logs.md``).
"""

from __future__ import annotations

from nemo.lens.instruments import gym, inference, rl
from nemo.lens.instruments._recording import (
    record_gym_rollout_metrics,
    record_inference_metrics,
    record_rl_step_metrics,
)
from nemo.lens.instruments.rl import record_rl_metrics

__all__ = [
    "gym",
    "inference",
    "record_gym_rollout_metrics",
    "record_inference_metrics",
    "record_rl_metrics",
    "record_rl_step_metrics",
    "rl",
]
