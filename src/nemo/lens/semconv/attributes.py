# DO NOT EDIT: generated from schema/span_groups.toml by nemo-lens generate.
# Edit the schema, then run `make generate`.
# schema-sha256: 8ad7b6264e4b1becd966e3fd4dfd24637b8c2d7d384c289e41cc7f993ed5e1b6
"""The names nemo.lens emits and reads, other than the resource's and the metrics': span and log
attributes, metric attributes and fixed values, and upstream's names.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "CODE_FILE_PATH",
    "CODE_FUNCTION_NAME",
    "CODE_LINE_NUMBER",
    "DL_BATCH_SIZE",
    "DL_DATA_PARALLEL_RANK",
    "DL_DATA_PARALLEL_SIZE",
    "DL_GRAD_NORM",
    "DL_ITERATION",
    "DL_LEARNING_RATE",
    "DL_LOCAL_RANK",
    "DL_LOSS",
    "DL_MICROBATCH_ID",
    "DL_PIPELINE_PARALLEL_RANK",
    "DL_PIPELINE_PARALLEL_SIZE",
    "DL_SEQUENCE_LENGTH",
    "DL_TENSOR_PARALLEL_RANK",
    "DL_TENSOR_PARALLEL_SIZE",
    "DL_THROUGHPUT_TFLOPS",
    "DL_THROUGHPUT_TOKENS_PER_SEC",
    "ERROR_TYPE",
    "EXCEPTION_ESCAPED",
    "EXCEPTION_MESSAGE",
    "EXCEPTION_STACKTRACE",
    "EXCEPTION_TYPE",
    "GENAI_OPERATION_NAME",
    "GENAI_PROVIDER_NAME",
    "GENAI_REQUEST_MODEL",
    "GENAI_TOKEN_TYPE",
    "GEN_AI_OPERATION_NAME",
    "GEN_AI_PROVIDER_NAME",
    "GEN_AI_REQUEST_MODEL",
    "GEN_AI_RESPONSE_MODEL",
    "GEN_AI_TOKEN_TYPE",
    "GEN_AI_TOKEN_TYPE_INPUT",
    "GEN_AI_TOKEN_TYPE_OUTPUT",
    "GOODPUT_BUCKET",
    "GOODPUT_WINDOW",
    "GYM_AGENT",
    "GYM_ENVIRONMENT",
    "GYM_NUM_SERVERS",
    "GYM_ROLLOUT_BATCH_SIZE",
    "GYM_SERVER_NAME",
    "GYM_SERVER_TYPE",
    "GYM_VERIFY_PASSED",
    "GYM_VERIFY_SUCCESS_RATE",
    "INVERTED_DELTA_SECONDS",
    "INVERTED_END_EPOCH_SECONDS",
    "INVERTED_SKEW",
    "INVERTED_START_EPOCH_SECONDS",
    "LEGACY_SPAN_GROUP",
    "LOG_SPAN_ID",
    "LOG_TRACE_ID",
    "LOG_TRACE_SAMPLED",
    "NEMO_SPAN_TRUNCATED",
    "RL_ALGORITHM",
    "RL_ENTROPY",
    "RL_GENERATION_BACKEND",
    "RL_GRAD_NORM",
    "RL_KL_DIVERGENCE",
    "RL_LEARNING_RATE",
    "RL_NUM_ROLLOUTS",
    "RL_POLICY_LOSS",
    "RL_RESPONSE_LENGTH_MEAN",
    "RL_REWARD",
    "RL_REWARD_MEAN",
    "RL_THROUGHPUT_TOKENS_PER_SEC",
    "RL_VALUE_LOSS",
    "SCOPE_NAME",
    "SEMCONV_VERSION",
    "SPAN_CATEGORY",
    "SPAN_ENCODE_ERROR",
    "SPAN_GROUP",
    "SPAN_TRUNCATED",
    "SPAN_TRUNCATED_AT_SHUTDOWN",
    "SPAN_TRUNCATED_EVENT",
    "SPAN_TRUNCATED_PROCESS_ENDED",
    "SPAN_TRUNCATED_REASON",
]

# -- Distributed training

DL_BATCH_SIZE: Final = "dl.batch_size"
"""The batch size. Upstream nemo.lens 0.2.0 defines this constant with this value."""

DL_DATA_PARALLEL_RANK: Final = "dl.data_parallel.rank"
"""The rank within the data-parallel group. Upstream nemo.lens 0.2.0 defines this constant with
this value.
"""

DL_DATA_PARALLEL_SIZE: Final = "dl.data_parallel.size"
"""The size of the data-parallel group. Upstream nemo.lens 0.2.0 defines this constant with this
value.
"""

DL_GRAD_NORM: Final = "dl.grad_norm"
"""The gradient norm. Upstream nemo.lens 0.2.0 defines this constant with this value."""

DL_ITERATION: Final = "dl.iteration"
"""The training iteration. Upstream nemo.lens 0.2.0 defines this constant with this value."""

DL_LEARNING_RATE: Final = "dl.learning_rate"
"""The learning rate. Upstream nemo.lens 0.2.0 defines this constant with this value."""

DL_LOCAL_RANK: Final = "dl.local_rank"
"""The rank within the node (the resource carries it as `nemo.local_rank`). Upstream nemo.lens
0.2.0 defines this constant with this value.
"""

DL_LOSS: Final = "dl.loss"
"""The training loss. Upstream nemo.lens 0.2.0 defines this constant with this value."""

DL_MICROBATCH_ID: Final = "dl.microbatch_id"
"""The index of a microbatch within its iteration. Upstream nemo.lens 0.2.0 defines this constant
with this value.
"""

DL_PIPELINE_PARALLEL_RANK: Final = "dl.pipeline_parallel.rank"
"""The pipeline stage (the rank within the pipeline-parallel group). Upstream nemo.lens 0.2.0
defines this constant with this value.
"""

DL_PIPELINE_PARALLEL_SIZE: Final = "dl.pipeline_parallel.size"
"""The number of pipeline stages. Upstream nemo.lens 0.2.0 defines this constant with this value."""

DL_SEQUENCE_LENGTH: Final = "dl.sequence_length"
"""The sequence length. Upstream nemo.lens 0.2.0 defines this constant with this value."""

DL_TENSOR_PARALLEL_RANK: Final = "dl.tensor_parallel.rank"
"""The rank within the tensor-parallel group. Upstream nemo.lens 0.2.0 defines this constant with
this value.
"""

DL_TENSOR_PARALLEL_SIZE: Final = "dl.tensor_parallel.size"
"""The size of the tensor-parallel group. Upstream nemo.lens 0.2.0 defines this constant with
this value.
"""

DL_THROUGHPUT_TFLOPS: Final = "dl.throughput_tflops"
"""Achieved throughput in TFLOP/s. Upstream nemo.lens 0.2.0 defines this constant with this
value.
"""

DL_THROUGHPUT_TOKENS_PER_SEC: Final = "dl.throughput_tokens_per_sec"
"""Achieved throughput in tokens per second. Upstream nemo.lens 0.2.0 defines this constant with
this value.
"""

# -- GenAI inference

ERROR_TYPE: Final = "error.type"
"""Metric attribute: a low-cardinality class of the error an operation ended with. Type:
`string`.
"""

GENAI_OPERATION_NAME: Final = "gen_ai.operation.name"
"""The GenAI operation, under upstream's spelling of the constant. The same value as
`GEN_AI_OPERATION_NAME`. Type: `string`. Upstream nemo.lens 0.2.0 defines this constant with
this value.
"""

GENAI_PROVIDER_NAME: Final = "gen_ai.provider.name"
"""Who serves the model, under upstream's spelling of the constant. The same value as
`GEN_AI_PROVIDER_NAME`. Type: `string`. Upstream nemo.lens 0.2.0 defines this constant with
this value.
"""

GENAI_REQUEST_MODEL: Final = "gen_ai.request.model"
"""The model the request asked for, under upstream's spelling of the constant. The same value as
`GEN_AI_REQUEST_MODEL`. Type: `string`. Upstream nemo.lens 0.2.0 defines this constant with
this value.
"""

GENAI_TOKEN_TYPE: Final = "gen_ai.token.type"
"""The token type, `input` or `output`, under upstream's spelling of the constant. The same value
as `GEN_AI_TOKEN_TYPE`. Type: `string`. Upstream nemo.lens 0.2.0 defines this constant with
this value.
"""

GEN_AI_OPERATION_NAME: Final = "gen_ai.operation.name"
"""Metric attribute: the operation (`chat`, `text_completion`, `generate_content`, ...). Type:
`string`.
"""

GEN_AI_PROVIDER_NAME: Final = "gen_ai.provider.name"
"""Metric attribute: who serves the model (`openai`, `vllm`, `megatron`, ...). Type: `string`."""

GEN_AI_REQUEST_MODEL: Final = "gen_ai.request.model"
"""Metric attribute: the model the request asked for. Type: `string`."""

GEN_AI_RESPONSE_MODEL: Final = "gen_ai.response.model"
"""Metric attribute: the model that actually answered, when it differs or is more precise. Type:
`string`.
"""

GEN_AI_TOKEN_TYPE: Final = "gen_ai.token.type"
"""Metric attribute of `gen_ai.client.token.usage`: `input` or `output`. Type: `string`."""

GEN_AI_TOKEN_TYPE_INPUT: Final = "input"
"""The token type of prompt (input) tokens. A value of `gen_ai.token.type`."""

GEN_AI_TOKEN_TYPE_OUTPUT: Final = "output"
"""The token type of generated (output) tokens. A value of `gen_ai.token.type`."""

# -- Goodput metrics

GOODPUT_BUCKET: Final = "nemo.goodput.bucket"
"""Metric attribute of `nemo.goodput.time` and `nemo.goodput.window.time`: the bucket, as `nemo-
lens goodput` names it (`productive`, `wasted_progress`, `unaccounted`, and the `bucket` of
each schema group). Type: `string`.
"""

GOODPUT_WINDOW: Final = "nemo.goodput.window"
"""Metric attribute of the rolling-window instruments: the window's length in seconds (60, 300,
900 unless `NEMO_LENS_GOODPUT_METRICS` names others). Type: `int`.
"""

# -- Gym rollouts

GYM_AGENT: Final = "nemo.gym.agent"
"""Metric attribute: the agent that produced a rollout. Type: `string`."""

GYM_ENVIRONMENT: Final = "nemo.gym.environment"
"""Metric attribute: the environment (resource server) a rollout ran in. Type: `string`."""

GYM_NUM_SERVERS: Final = "gym.num_servers"
"""How many Gym servers there are. Upstream nemo.lens 0.2.0 defines this constant with this
value.
"""

GYM_ROLLOUT_BATCH_SIZE: Final = "gym.rollout.batch_size"
"""How many rollouts a batch holds. Upstream nemo.lens 0.2.0 defines this constant with this
value.
"""

GYM_SERVER_NAME: Final = "gym.server.name"
"""The name of a Gym server. Upstream nemo.lens 0.2.0 defines this constant with this value."""

GYM_SERVER_TYPE: Final = "gym.server.type"
"""The type of a Gym server. Upstream nemo.lens 0.2.0 defines this constant with this value."""

GYM_VERIFY_PASSED: Final = "nemo.gym.verify.passed"
"""Metric attribute: `True` when the rollout passed verification, `False` when it failed. Type:
`boolean`.
"""

GYM_VERIFY_SUCCESS_RATE: Final = "gym.verify.success_rate"
"""The fraction of verifications that passed (also the name of 0.1.0's gauge
`LEGACY_GYM_VERIFY_SUCCESS_RATE`). Upstream nemo.lens 0.2.0 defines this constant with this
value.
"""

# -- The library

SCOPE_NAME: Final = "nemo.lens"
"""Instrumentation scope of nemo.lens's own tracer and meter (`get_tracer()`, `get_meter()`)."""

SEMCONV_VERSION: Final = "1.29.0"
"""The OpenTelemetry semantic-conventions release upstream nemo-lens states its standard names
follow; nemo.lens's GenAI names follow a newer one (see the GenAI section). Upstream nemo.lens
0.2.0 defines this constant with this value.
"""

# -- Logs

CODE_FILE_PATH: Final = "code.file.path"
"""Exported log attribute: the source file that logged (`LogRecord.pathname`). Type: `string`."""

CODE_FUNCTION_NAME: Final = "code.function.name"
"""Exported log attribute: the function that logged (`LogRecord.funcName`). Type: `string`."""

CODE_LINE_NUMBER: Final = "code.line.number"
"""Exported log attribute: the line that logged (`LogRecord.lineno`). Type: `int`."""

EXCEPTION_ESCAPED: Final = "exception.escaped"
"""`exception` span-event attribute: `False` as text (as the SDK's `record_exception` sets it).
Type: `string`.
"""

EXCEPTION_MESSAGE: Final = "exception.message"
"""Exported log and `exception` span-event attribute: `str()` of the exception (a stand-in naming
the failure when its `__str__` raises). Type: `string`.
"""

EXCEPTION_STACKTRACE: Final = "exception.stacktrace"
"""Exported log and `exception` span-event attribute: the formatted traceback. Type: `string`."""

EXCEPTION_TYPE: Final = "exception.type"
"""Exported log and `exception` span-event attribute: the fully qualified class name of the
exception. Type: `string`.
"""

LOG_SPAN_ID: Final = "otelSpanID"
"""`LogRecord` field: the current span id, 16 lower-case hex digits; `0` outside a span."""

LOG_TRACE_ID: Final = "otelTraceID"
"""`LogRecord` field: the current trace id, 32 lower-case hex digits; `0` outside a span."""

LOG_TRACE_SAMPLED: Final = "otelTraceSampled"
"""`LogRecord` field: whether the current span is sampled (`False` outside a span)."""

# -- RL steps

RL_ALGORITHM: Final = "rl.algorithm"
"""The RL algorithm (`grpo`, `ppo`, ...). Upstream nemo.lens 0.2.0 defines this constant with
this value.
"""

RL_ENTROPY: Final = "rl.entropy"
"""The policy entropy (also a 0.1.0 gauge's name). Upstream nemo.lens 0.2.0 defines this constant
with this value.
"""

RL_GENERATION_BACKEND: Final = "rl.generation.backend"
"""What generates the rollouts (`vllm`, `megatron`, ...). Upstream nemo.lens 0.2.0 defines this
constant with this value.
"""

RL_GRAD_NORM: Final = "rl.grad_norm"
"""The gradient norm of the policy update. Upstream nemo.lens 0.2.0 defines this constant with
this value.
"""

RL_KL_DIVERGENCE: Final = "rl.kl_divergence"
"""The KL divergence between the policy and the reference (also a 0.1.0 gauge's name). Upstream
nemo.lens 0.2.0 defines this constant with this value.
"""

RL_LEARNING_RATE: Final = "rl.learning_rate"
"""The learning rate of the policy update. Upstream nemo.lens 0.2.0 defines this constant with
this value.
"""

RL_NUM_ROLLOUTS: Final = "rl.num_rollouts"
"""How many rollouts a step collected. Upstream nemo.lens 0.2.0 defines this constant with this
value.
"""

RL_POLICY_LOSS: Final = "rl.policy_loss"
"""The policy-gradient loss (also a 0.1.0 gauge's name). Upstream nemo.lens 0.2.0 defines this
constant with this value.
"""

RL_RESPONSE_LENGTH_MEAN: Final = "rl.response_length.mean"
"""The mean generated response length in tokens (also a 0.1.0 gauge's name). Upstream nemo.lens
0.2.0 defines this constant with this value.
"""

RL_REWARD: Final = "rl.reward"
"""A reward. Upstream nemo.lens 0.2.0 defines this constant with this value."""

RL_REWARD_MEAN: Final = "rl.reward.mean"
"""The mean reward of a rollout batch (also the name of 0.1.0's gauge `LEGACY_RL_REWARD_MEAN`;
nemo.lens's own gauge is `NEMO_RL_REWARD_MEAN`). Upstream nemo.lens 0.2.0 defines this
constant with this value.
"""

RL_THROUGHPUT_TOKENS_PER_SEC: Final = "rl.throughput.tokens_per_sec"
"""Generation throughput in tokens per second. Upstream nemo.lens 0.2.0 defines this constant
with this value.
"""

RL_VALUE_LOSS: Final = "rl.value_loss"
"""The value-function loss (also a 0.1.0 gauge's name). Upstream nemo.lens 0.2.0 defines this
constant with this value.
"""

# -- Span attributes

INVERTED_DELTA_SECONDS: Final = "inverted.delta_seconds"
"""End minus start as given, negative, for a span marked `inverted.skew` (seconds). Type:
`double`.
"""

INVERTED_END_EPOCH_SECONDS: Final = "inverted.end_epoch_seconds"
"""The end `emit_span` was given for a span marked `inverted.skew` (epoch seconds). Type:
`double`.
"""

INVERTED_SKEW: Final = "inverted.skew"
"""`True` on a span from `emit_span` whose end was before its start (clock skew): its end was
clamped to its start, and the given times are kept in the other `inverted.*` attributes. Type:
`boolean`.
"""

INVERTED_START_EPOCH_SECONDS: Final = "inverted.start_epoch_seconds"
"""The start `emit_span` was given for a span marked `inverted.skew` (epoch seconds). Type:
`double`.
"""

LEGACY_SPAN_GROUP: Final = "nemo.span_group"
"""Where nemo.lens 0.1 and early 0.2 traces kept a span's group (now `lens.group`); only read:
`nemo-lens summarize` and `convert` fall back to it for older traces. Type: `string`.
"""

NEMO_SPAN_TRUNCATED: Final = "nemo.span.truncated"
"""`True` on a span that shutdown ended while it was still open, under upstream's name for the
constant. The same value as `SPAN_TRUNCATED`. Type: `boolean`. Upstream nemo.lens 0.2.0
defines this constant with this value.
"""

SPAN_CATEGORY: Final = "lens.span_category"
"""The category of the span's group, `goodput` or `profiling`, set with `lens.group`: from the
span-group class(es) set-up was configured with (`NemoLensConfig.span_group_cls`); a group no
configured class knows is `profiling`. Type: `string`.
"""

SPAN_ENCODE_ERROR: Final = "nemo.span.encode_error"
"""On the stand-in line the JSON exporters write for a span they could not encode at all (a
custom span object whose fields raise): why; never seen with the SDK's spans. Type: `string`.
"""

SPAN_GROUP: Final = "lens.group"
"""The span group a span was emitted for, set at span start (so samplers see it) by every gated
primitive (`managed_span`, `trace_fn`, the contrib helpers given a `group`) and by `span_cm`,
`emit_span` and `create_linked_span` given `group=`; the key the rest of the ecosystem slices
by (traces written before 0.2 carry `nemo.span_group` instead). Type: `string`.
"""

SPAN_TRUNCATED: Final = "nemo.span.truncated"
"""`True` on a span that was still open at shutdown and was ended by it (its end time is the
shutdown time, not the end of the work it traced), or that the `nemo-lens` commands ended for
a process that died with it open. Type: `boolean`.
"""

SPAN_TRUNCATED_AT_SHUTDOWN: Final = "still open at telemetry shutdown"
"""The reason of a span that telemetry shutdown ended. A value of `nemo.span.truncated.reason`."""

SPAN_TRUNCATED_EVENT: Final = "nemo.span.truncated"
"""The event on a span that shutdown ended while it was still open (with the attribute of the
same name), saying why in its `nemo.span.truncated.reason`.
"""

SPAN_TRUNCATED_PROCESS_ENDED: Final = "process ended without closing the span"
"""The reason of a span that the `nemo-lens` commands end for a process that died with it open
(SIGKILL, a crash): the `file` exporter recorded that it started and never that it ended, so
it is read as ending at its process lifetime's last recorded instant. A value of
`nemo.span.truncated.reason`.
"""

SPAN_TRUNCATED_REASON: Final = "nemo.span.truncated.reason"
"""Attribute of the `nemo.span.truncated` event: why the span was ended for it. Type: `string`."""
