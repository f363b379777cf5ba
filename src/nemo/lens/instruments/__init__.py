"""Metric helpers: one call records a unit of work's numbers under fixed names.

The GenAI, RL step and Gym rollout recorders, 0.1.0's helpers (``inference``, ``rl``, ``gym``)
and a consumer's own series (:func:`register_metric_group`, :func:`record_metrics`).
``None`` means "not measured"; a bad value is skipped and logged once; nothing raises
(``docs/metrics-and-logs.md``)."""

from __future__ import annotations

from nemo.lens.instruments import gym, inference, rl
from nemo.lens.instruments._recording import (
    record_gym_rollout_metrics,
    record_inference_metrics,
    record_rl_step_metrics,
)
from nemo.lens.instruments.registry import (
    METRIC_KINDS,
    OBSERVABLE_METRIC_KINDS,
    MetricSpec,
    create_metric_instruments,
    record_metrics,
    register_metric_group,
    registered_metric_groups,
    unregister_metric_group,
)
from nemo.lens.instruments.rl import record_rl_metrics

__all__ = [
    "METRIC_KINDS",
    "OBSERVABLE_METRIC_KINDS",
    "MetricSpec",
    "create_metric_instruments",
    "gym",
    "inference",
    "record_gym_rollout_metrics",
    "record_inference_metrics",
    "record_metrics",
    "record_rl_metrics",
    "record_rl_step_metrics",
    "register_metric_group",
    "registered_metric_groups",
    "rl",
    "unregister_metric_group",
]
