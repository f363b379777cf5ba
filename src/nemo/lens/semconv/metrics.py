# DO NOT EDIT: generated from schema/span_groups.toml by nemo-lens generate.
# Edit the schema, then run `make generate`.
# schema-sha256: 8ad7b6264e4b1becd966e3fd4dfd24637b8c2d7d384c289e41cc7f993ed5e1b6
"""The metric catalogue of nemo.lens: every instrument its recorders create."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from nemo.lens.spec import MetricInfo, by_name

__all__ = [
    "GEN_AI_CLIENT_OPERATION_DURATION",
    "GEN_AI_CLIENT_TOKEN_USAGE",
    "GEN_AI_SERVER_REQUEST_DURATION",
    "GEN_AI_SERVER_TIME_PER_OUTPUT_TOKEN",
    "GEN_AI_SERVER_TIME_TO_FIRST_TOKEN",
    "GOODPUT_RATIO",
    "GOODPUT_TIME",
    "GOODPUT_WINDOW_RATIO",
    "GOODPUT_WINDOW_TIME",
    "GYM_ROLLOUTS",
    "GYM_ROLLOUT_DURATION",
    "GYM_ROLLOUT_SANDBOX_CALLS",
    "GYM_ROLLOUT_TOOL_CALLS",
    "GYM_VERIFY_DURATION",
    "INSTRUMENTS",
    "LEGACY_GYM_ROLLOUT_DURATION_MS",
    "LEGACY_GYM_SERVERS_ACTIVE",
    "LEGACY_GYM_SERVER_REQUEST_DURATION_MS",
    "LEGACY_GYM_VERIFY_DURATION_MS",
    "LEGACY_GYM_VERIFY_SUCCESS_RATE",
    "LEGACY_RL_ENTROPY",
    "LEGACY_RL_GENERATION_DURATION_MS",
    "LEGACY_RL_GRAD_NORM",
    "LEGACY_RL_KL_DIVERGENCE",
    "LEGACY_RL_LEARNING_RATE",
    "LEGACY_RL_POLICY_LOSS",
    "LEGACY_RL_RESPONSE_LENGTH_MEAN",
    "LEGACY_RL_REWARD_MEAN",
    "LEGACY_RL_ROLLOUT_DURATION_MS",
    "LEGACY_RL_THROUGHPUT_TOKENS_PER_SEC",
    "LEGACY_RL_VALUE_LOSS",
    "NEMO_RL_REWARD_MEAN",
    "RL_GENERATION_DURATION",
    "RL_GENERATION_THROUGHPUT",
    "RL_GENERATION_TOKENS",
    "RL_POLICY_UPDATE_DURATION",
    "RL_REWARD_MAX",
    "RL_REWARD_MIN",
    "RL_REWARD_STD",
    "RL_ROLLOUT_DURATION",
    "RL_STEP",
    "RL_STEP_DURATION",
]

_call: Final = (
    0.0,
    1.0,
    2.0,
    4.0,
    8.0,
    16.0,
    32.0,
    64.0,
    128.0,
    256.0,
)
_gen_ai_duration_s: Final = (
    0.01,
    0.02,
    0.04,
    0.08,
    0.16,
    0.32,
    0.64,
    1.28,
    2.56,
    5.12,
    10.24,
    20.48,
    40.96,
    81.92,
)
_phase_ms: Final = (
    100.0,
    250.0,
    500.0,
    1000.0,
    2500.0,
    5000.0,
    10000.0,
    25000.0,
    50000.0,
    100000.0,
    250000.0,
    500000.0,
    1000000.0,
    2500000.0,
    5000000.0,
    10000000.0,
)
_phase_s: Final = (
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    25.0,
    50.0,
    100.0,
    250.0,
    500.0,
    1000.0,
    2500.0,
    5000.0,
    10000.0,
)
_request_ms: Final = (
    5.0,
    10.0,
    25.0,
    50.0,
    100.0,
    250.0,
    500.0,
    1000.0,
    2500.0,
    5000.0,
    10000.0,
    30000.0,
    60000.0,
)
_time_per_output_token_s: Final = (
    0.01,
    0.025,
    0.05,
    0.075,
    0.1,
    0.15,
    0.2,
    0.3,
    0.4,
    0.5,
    0.75,
    1.0,
    2.5,
)
_time_to_first_token_s: Final = (
    0.001,
    0.005,
    0.01,
    0.02,
    0.04,
    0.06,
    0.08,
    0.1,
    0.25,
    0.5,
    0.75,
    1.0,
    2.5,
    5.0,
    7.5,
    10.0,
)
_token: Final = (
    1.0,
    4.0,
    16.0,
    64.0,
    256.0,
    1024.0,
    4096.0,
    16384.0,
    65536.0,
    262144.0,
    1048576.0,
    4194304.0,
    16777216.0,
    67108864.0,
)

# -- GenAI inference: record_inference_metrics

GEN_AI_CLIENT_OPERATION_DURATION: Final = "gen_ai.client.operation.duration"
"""Duration of one GenAI operation as its caller saw it. A histogram in `s`, recorded from
`operation_duration_s` of `record_inference_metrics`.
"""

GEN_AI_CLIENT_TOKEN_USAGE: Final = "gen_ai.client.token.usage"
"""Tokens used by one GenAI operation, by token type. A histogram in `{token}`, recorded from
`input_tokens` and `output_tokens` of `record_inference_metrics` (one point each, by
`gen_ai.token.type`).
"""

GEN_AI_SERVER_REQUEST_DURATION: Final = "gen_ai.server.request.duration"
"""Duration of one request in the model server, to its last output token. A histogram in `s`,
recorded from `request_duration_s` of `record_inference_metrics`.
"""

GEN_AI_SERVER_TIME_PER_OUTPUT_TOKEN: Final = "gen_ai.server.time_per_output_token"
"""Mean time per output token after the first, for one request. A histogram in `s`, recorded from
`time_per_output_token_s` of `record_inference_metrics`.
"""

GEN_AI_SERVER_TIME_TO_FIRST_TOKEN: Final = "gen_ai.server.time_to_first_token"
"""Time from a request's arrival to its first generated token. A histogram in `s`, recorded from
`time_to_first_token_s` of `record_inference_metrics`.
"""

# -- Goodput while the job runs: NEMO_LENS_GOODPUT_METRICS

GOODPUT_RATIO: Final = "nemo.goodput.ratio"
"""Productive time over wall time of this process so far (nemo-lens goodput's goodput). A gauge
in `1`, recorded from the goodput recorder (`NEMO_LENS_GOODPUT_METRICS`).
"""

GOODPUT_TIME: Final = "nemo.goodput.time"
"""Seconds of this process's wall time so far in each goodput bucket (by nemo.goodput.bucket;
unaccounted included), as nemo-lens goodput counts them. A gauge in `s`, recorded from the
goodput recorder (`NEMO_LENS_GOODPUT_METRICS`), one point per bucket.
"""

GOODPUT_WINDOW_RATIO: Final = "nemo.goodput.window.ratio"
"""Productive time over the last nemo.goodput.window seconds (rolling-window goodput; by
nemo.goodput.window). A gauge in `1`, recorded from the goodput recorder, one point per
window.
"""

GOODPUT_WINDOW_TIME: Final = "nemo.goodput.window.time"
"""Seconds in each goodput bucket over the last nemo.goodput.window seconds (by
nemo.goodput.bucket and nemo.goodput.window). A gauge in `s`, recorded from the goodput
recorder, one point per bucket and window.
"""

# -- Gym rollouts: record_gym_rollout_metrics

GYM_ROLLOUT_DURATION: Final = "nemo.gym.rollout.duration"
"""Duration of one rollout, to its verified result. A histogram in `s`, recorded from
`duration_s` of `record_gym_rollout_metrics`.
"""

GYM_ROLLOUT_SANDBOX_CALLS: Final = "nemo.gym.rollout.sandbox_calls"
"""Sandbox calls made by one rollout. A histogram in `{call}`, recorded from `sandbox_calls` of
`record_gym_rollout_metrics`.
"""

GYM_ROLLOUT_TOOL_CALLS: Final = "nemo.gym.rollout.tool_calls"
"""Tool calls made by one rollout. A histogram in `{call}`, recorded from `tool_calls` of
`record_gym_rollout_metrics`.
"""

GYM_ROLLOUTS: Final = "nemo.gym.rollouts"
"""Finished rollouts. A counter in `{rollout}`, recorded from every call of
`record_gym_rollout_metrics`.
"""

GYM_VERIFY_DURATION: Final = "nemo.gym.verify.duration"
"""Duration of one rollout's verification. A histogram in `s`, recorded from `verify_duration_s`
of `record_gym_rollout_metrics`.
"""

# -- The 0.1.0 and v0.2.0 helpers: rl.record_rl_metrics and gym.record_gym_metrics

LEGACY_GYM_ROLLOUT_DURATION_MS: Final = "gym.rollout.duration_ms"
"""Rollout collection duration in milliseconds. A histogram in `ms`, recorded from
`rollout_duration_ms` of 0.1.0's `gym.record_gym_metrics`.
"""

LEGACY_GYM_SERVER_REQUEST_DURATION_MS: Final = "gym.server.request_duration_ms"
"""Gym server request duration in milliseconds. A histogram in `ms`, recorded from
`server_request_duration_ms` of 0.1.0's `gym.record_gym_metrics`.
"""

LEGACY_GYM_SERVERS_ACTIVE: Final = "gym.servers.active"
"""Number of active Gym servers. A gauge in `1`, recorded from `active_servers` of 0.1.0's
`gym.record_gym_metrics`.
"""

LEGACY_GYM_VERIFY_DURATION_MS: Final = "gym.verify.duration_ms"
"""Verification endpoint duration in milliseconds. A histogram in `ms`, recorded from
`verify_duration_ms` of 0.1.0's `gym.record_gym_metrics`.
"""

LEGACY_GYM_VERIFY_SUCCESS_RATE: Final = "gym.verify.success_rate"
"""Fraction of successful verifications. A gauge in `1`, recorded from `verify_success_rate` of
0.1.0's `gym.record_gym_metrics`.
"""

LEGACY_RL_ENTROPY: Final = "rl.entropy"
"""Policy entropy. A gauge in `1`, recorded from `entropy` of 0.1.0's `rl.record_rl_metrics`."""

LEGACY_RL_GENERATION_DURATION_MS: Final = "rl.generation.duration_ms"
"""Duration of text generation in milliseconds. A histogram in `ms`, recorded from
`generation_duration_ms` of 0.1.0's `rl.record_rl_metrics`.
"""

LEGACY_RL_GRAD_NORM: Final = "rl.grad_norm"
"""Gradient norm of the policy update. A gauge in `1`, recorded from `grad_norm` of v0.2.0's
`rl.record_rl_metrics`.
"""

LEGACY_RL_KL_DIVERGENCE: Final = "rl.kl_divergence"
"""KL divergence between policy and reference. A gauge in `1`, recorded from `kl_divergence` of
0.1.0's `rl.record_rl_metrics`.
"""

LEGACY_RL_LEARNING_RATE: Final = "rl.learning_rate"
"""Optimizer learning rate of the policy update. A gauge in `1`, recorded from `learning_rate` of
v0.2.0's `rl.record_rl_metrics`.
"""

LEGACY_RL_POLICY_LOSS: Final = "rl.policy_loss"
"""Policy gradient loss. A gauge in `1`, recorded from `policy_loss` of 0.1.0's
`rl.record_rl_metrics`.
"""

LEGACY_RL_RESPONSE_LENGTH_MEAN: Final = "rl.response_length.mean"
"""Mean generated response length (tokens). A gauge in `1`, recorded from `response_length_mean`
of 0.1.0's `rl.record_rl_metrics`.
"""

LEGACY_RL_REWARD_MEAN: Final = "rl.reward.mean"
"""Mean reward across rollout batch. A gauge in `1`, recorded from `reward_mean` of 0.1.0's
`rl.record_rl_metrics`.
"""

LEGACY_RL_ROLLOUT_DURATION_MS: Final = "rl.rollout.duration_ms"
"""Duration of rollout collection in milliseconds. A histogram in `ms`, recorded from
`rollout_duration_ms` of 0.1.0's `rl.record_rl_metrics`.
"""

LEGACY_RL_THROUGHPUT_TOKENS_PER_SEC: Final = "rl.throughput.tokens_per_sec"
"""Training throughput in tokens per second. A gauge in `{token}/s`, recorded from
`throughput_tokens_per_sec` of v0.2.0's `rl.record_rl_metrics`.
"""

LEGACY_RL_VALUE_LOSS: Final = "rl.value_loss"
"""Value function loss. A gauge in `1`, recorded from `value_loss` of 0.1.0's
`rl.record_rl_metrics`.
"""

# -- RL steps: record_rl_step_metrics

RL_GENERATION_DURATION: Final = "nemo.rl.generation.duration"
"""Duration of one step's generation phase. A histogram in `s`, recorded from
`generation_duration_s` of `record_rl_step_metrics`.
"""

RL_GENERATION_THROUGHPUT: Final = "nemo.rl.generation.throughput"
"""Generation throughput of the last step. A gauge in `{token}/s`, recorded from
`tokens_per_second` of `record_rl_step_metrics` (else tokens over generation time).
"""

RL_GENERATION_TOKENS: Final = "nemo.rl.generation.tokens"
"""Tokens generated. A counter in `{token}`, recorded from `generated_tokens` of
`record_rl_step_metrics`.
"""

RL_POLICY_UPDATE_DURATION: Final = "nemo.rl.policy_update.duration"
"""Duration of one step's policy update. A histogram in `s`, recorded from
`policy_update_duration_s` of `record_rl_step_metrics`.
"""

RL_REWARD_MAX: Final = "nemo.rl.reward.max"
"""Highest reward of the last step. A gauge in `1`, recorded from `reward_max` of
`record_rl_step_metrics`.
"""

NEMO_RL_REWARD_MEAN: Final = "nemo.rl.reward.mean"
"""Mean reward of the last step. A gauge in `1`, recorded from `reward_mean` of
`record_rl_step_metrics`.
"""

RL_REWARD_MIN: Final = "nemo.rl.reward.min"
"""Lowest reward of the last step. A gauge in `1`, recorded from `reward_min` of
`record_rl_step_metrics`.
"""

RL_REWARD_STD: Final = "nemo.rl.reward.std"
"""Standard deviation of the last step's rewards. A gauge in `1`, recorded from `reward_std` of
`record_rl_step_metrics`.
"""

RL_ROLLOUT_DURATION: Final = "nemo.rl.rollout.duration"
"""Duration of one step's rollout phase. A histogram in `s`, recorded from `rollout_duration_s`
of `record_rl_step_metrics`.
"""

RL_STEP: Final = "nemo.rl.step"
"""The last RL step reported. A gauge in `{step}`, recorded from `step` of
`record_rl_step_metrics`.
"""

RL_STEP_DURATION: Final = "nemo.rl.step.duration"
"""Duration of one RL step. A histogram in `s`, recorded from `step_duration_s` of
`record_rl_step_metrics`.
"""


INSTRUMENTS: Final[Mapping[str, MetricInfo]] = by_name(
    MetricInfo(
        GEN_AI_CLIENT_OPERATION_DURATION,
        "histogram",
        "s",
        "Duration of one GenAI operation as its caller saw it.",
        boundaries=_gen_ai_duration_s,
    ),
    MetricInfo(
        GEN_AI_CLIENT_TOKEN_USAGE,
        "histogram",
        "{token}",
        "Tokens used by one GenAI operation, by token type.",
        boundaries=_token,
    ),
    MetricInfo(
        GEN_AI_SERVER_REQUEST_DURATION,
        "histogram",
        "s",
        "Duration of one request in the model server, to its last output token.",
        boundaries=_gen_ai_duration_s,
    ),
    MetricInfo(
        GEN_AI_SERVER_TIME_PER_OUTPUT_TOKEN,
        "histogram",
        "s",
        "Mean time per output token after the first, for one request.",
        boundaries=_time_per_output_token_s,
    ),
    MetricInfo(
        GEN_AI_SERVER_TIME_TO_FIRST_TOKEN,
        "histogram",
        "s",
        "Time from a request's arrival to its first generated token.",
        boundaries=_time_to_first_token_s,
    ),
    MetricInfo(
        LEGACY_GYM_ROLLOUT_DURATION_MS,
        "histogram",
        "ms",
        "Rollout collection duration in milliseconds.",
        boundaries=_phase_ms,
    ),
    MetricInfo(
        LEGACY_GYM_SERVER_REQUEST_DURATION_MS,
        "histogram",
        "ms",
        "Gym server request duration in milliseconds.",
        boundaries=_request_ms,
    ),
    MetricInfo(
        LEGACY_GYM_SERVERS_ACTIVE,
        "gauge",
        "",
        "Number of active Gym servers.",
    ),
    MetricInfo(
        LEGACY_GYM_VERIFY_DURATION_MS,
        "histogram",
        "ms",
        "Verification endpoint duration in milliseconds.",
        boundaries=_phase_ms,
    ),
    MetricInfo(
        LEGACY_GYM_VERIFY_SUCCESS_RATE,
        "gauge",
        "",
        "Fraction of successful verifications.",
    ),
    MetricInfo(
        GOODPUT_RATIO,
        "gauge",
        "1",
        "Productive time over wall time of this process so far (nemo-lens goodput's goodput).",
    ),
    MetricInfo(
        GOODPUT_TIME,
        "gauge",
        "s",
        (
            "Seconds of this process's wall time so far in each goodput bucket (by "
            "nemo.goodput.bucket; unaccounted included), as nemo-lens goodput counts them."
        ),
    ),
    MetricInfo(
        GOODPUT_WINDOW_RATIO,
        "gauge",
        "1",
        (
            "Productive time over the last nemo.goodput.window seconds (rolling-window goodput; "
            "by nemo.goodput.window)."
        ),
    ),
    MetricInfo(
        GOODPUT_WINDOW_TIME,
        "gauge",
        "s",
        (
            "Seconds in each goodput bucket over the last nemo.goodput.window seconds (by "
            "nemo.goodput.bucket and nemo.goodput.window)."
        ),
    ),
    MetricInfo(
        GYM_ROLLOUT_DURATION,
        "histogram",
        "s",
        "Duration of one rollout, to its verified result.",
        boundaries=_phase_s,
    ),
    MetricInfo(
        GYM_ROLLOUT_SANDBOX_CALLS,
        "histogram",
        "{call}",
        "Sandbox calls made by one rollout.",
        boundaries=_call,
    ),
    MetricInfo(
        GYM_ROLLOUT_TOOL_CALLS,
        "histogram",
        "{call}",
        "Tool calls made by one rollout.",
        boundaries=_call,
    ),
    MetricInfo(
        GYM_ROLLOUTS,
        "counter",
        "{rollout}",
        "Finished rollouts.",
    ),
    MetricInfo(
        GYM_VERIFY_DURATION,
        "histogram",
        "s",
        "Duration of one rollout's verification.",
        boundaries=_phase_s,
    ),
    MetricInfo(
        RL_GENERATION_DURATION,
        "histogram",
        "s",
        "Duration of one step's generation phase.",
        boundaries=_phase_s,
    ),
    MetricInfo(
        RL_GENERATION_THROUGHPUT,
        "gauge",
        "{token}/s",
        "Generation throughput of the last step.",
    ),
    MetricInfo(
        RL_GENERATION_TOKENS,
        "counter",
        "{token}",
        "Tokens generated.",
    ),
    MetricInfo(
        RL_POLICY_UPDATE_DURATION,
        "histogram",
        "s",
        "Duration of one step's policy update.",
        boundaries=_phase_s,
    ),
    MetricInfo(
        RL_REWARD_MAX,
        "gauge",
        "1",
        "Highest reward of the last step.",
        non_negative=False,
    ),
    MetricInfo(
        NEMO_RL_REWARD_MEAN,
        "gauge",
        "1",
        "Mean reward of the last step.",
        non_negative=False,
    ),
    MetricInfo(
        RL_REWARD_MIN,
        "gauge",
        "1",
        "Lowest reward of the last step.",
        non_negative=False,
    ),
    MetricInfo(
        RL_REWARD_STD,
        "gauge",
        "1",
        "Standard deviation of the last step's rewards.",
    ),
    MetricInfo(
        RL_ROLLOUT_DURATION,
        "histogram",
        "s",
        "Duration of one step's rollout phase.",
        boundaries=_phase_s,
    ),
    MetricInfo(
        RL_STEP,
        "gauge",
        "{step}",
        "The last RL step reported.",
    ),
    MetricInfo(
        RL_STEP_DURATION,
        "histogram",
        "s",
        "Duration of one RL step.",
        boundaries=_phase_s,
    ),
    MetricInfo(
        LEGACY_RL_ENTROPY,
        "gauge",
        "",
        "Policy entropy.",
        non_negative=False,
    ),
    MetricInfo(
        LEGACY_RL_GENERATION_DURATION_MS,
        "histogram",
        "ms",
        "Duration of text generation in milliseconds.",
        boundaries=_phase_ms,
    ),
    MetricInfo(
        LEGACY_RL_GRAD_NORM,
        "gauge",
        "",
        "Gradient norm of the policy update.",
    ),
    MetricInfo(
        LEGACY_RL_KL_DIVERGENCE,
        "gauge",
        "",
        "KL divergence between policy and reference.",
        non_negative=False,
    ),
    MetricInfo(
        LEGACY_RL_LEARNING_RATE,
        "gauge",
        "",
        "Optimizer learning rate of the policy update.",
    ),
    MetricInfo(
        LEGACY_RL_POLICY_LOSS,
        "gauge",
        "",
        "Policy gradient loss.",
        non_negative=False,
    ),
    MetricInfo(
        LEGACY_RL_RESPONSE_LENGTH_MEAN,
        "gauge",
        "",
        "Mean generated response length (tokens).",
    ),
    MetricInfo(
        LEGACY_RL_REWARD_MEAN,
        "gauge",
        "",
        "Mean reward across rollout batch.",
        non_negative=False,
    ),
    MetricInfo(
        LEGACY_RL_ROLLOUT_DURATION_MS,
        "histogram",
        "ms",
        "Duration of rollout collection in milliseconds.",
        boundaries=_phase_ms,
    ),
    MetricInfo(
        LEGACY_RL_THROUGHPUT_TOKENS_PER_SEC,
        "gauge",
        "{token}/s",
        "Training throughput in tokens per second.",
    ),
    MetricInfo(
        LEGACY_RL_VALUE_LOSS,
        "gauge",
        "",
        "Value function loss.",
        non_negative=False,
    ),
)
"""Metric name -> what the recorders create it as: kind, unit, description, boundaries."""
