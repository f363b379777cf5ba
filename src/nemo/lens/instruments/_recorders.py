"""The three metric recorders: which metric gets which value, under which attributes.

Documented with the package (:mod:`nemo.lens.instruments`), which re-exports them;
what they share lives in :mod:`nemo.lens.instruments._recording`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from opentelemetry import metrics

from nemo.lens import semconv as sc
from nemo.lens.instruments import _recording

__all__ = ["record_gym_rollout_metrics", "record_inference_metrics", "record_rl_step_metrics"]

# What 0.1.0 recorded when a call named neither (see record_inference_metrics).
_DEFAULT_OPERATION: Final = "text_completion"
_DEFAULT_PROVIDER: Final = "nemo"


def record_inference_metrics(
    meter: metrics.Meter | None = None,
    request_duration_s: float | None = None,
    model: str | None = None,
    input_tokens: int | None = None,
    output_tokens: int | None = None,
    provider_name: str | None = None,
    operation_name: str | None = None,
    *,
    operation: str | None = None,
    response_model: str | None = None,
    provider: str | None = None,
    operation_duration_s: float | None = None,
    time_to_first_token_s: float | None = None,
    time_per_output_token_s: float | None = None,
    error_type: str | None = None,
    attributes: Mapping[str, object] | None = None,
) -> None:
    """Record one GenAI operation (a request to a model) under the GenAI metric names.

    Each measurement goes to its own metric; ``None`` records nothing:

    =========================== ============================================ ========
    argument                    metric                                       unit
    =========================== ============================================ ========
    ``input_tokens``            ``gen_ai.client.token.usage``,               {token}
                                ``gen_ai.token.type=input``
    ``output_tokens``           ``gen_ai.client.token.usage``,               {token}
                                ``gen_ai.token.type=output``
    ``operation_duration_s``    ``gen_ai.client.operation.duration``         s
    ``request_duration_s``      ``gen_ai.server.request.duration``           s
    ``time_to_first_token_s``   ``gen_ai.server.time_to_first_token``        s
    ``time_per_output_token_s`` ``gen_ai.server.time_per_output_token``      s
    =========================== ============================================ ========

    The ``client`` metrics describe the call as its caller saw it (an RL
    trainer or an agent calling a model); the ``server`` ones describe the
    request inside the engine that generated it (an inference server, an
    in-process engine). Record whichever the code at hand measures.

    Called with keywords (``operation=...``), as nemo.lens 0.2 documents it; the
    first seven parameters are also 0.1.0's, in 0.1.0's order, so
    ``record_inference_metrics(meter, 0.8, "llama", 12, 30)`` records what 0.1.0
    recorded. Without ``operation=``, the 0.1.0 defaults apply:
    ``gen_ai.operation.name`` is *operation_name* or ``"text_completion"`` and
    ``gen_ai.provider.name`` is *provider_name* or ``"nemo"``.

    Args:
        meter: Where to record; ``None`` is nemo.lens's meter.
        request_duration_s: Whole request, as the server measured it.
        model: ``gen_ai.request.model``, the model asked for.
        input_tokens: Prompt tokens.
        output_tokens: Generated tokens.
        provider_name: 0.1.0's name for *provider*.
        operation_name: 0.1.0's name for *operation*.
        operation: ``gen_ai.operation.name``, required by the conventions:
            ``"chat"``, ``"text_completion"``, ``"generate_content"``, ...
        response_model: ``gen_ai.response.model``, the model that answered.
        provider: ``gen_ai.provider.name`` (``"vllm"``, ``"openai"``, ...).
        operation_duration_s: Whole operation, as the caller measured it.
        time_to_first_token_s: Request arrival to first generated token
            (successful requests only, as the conventions define it).
        time_per_output_token_s: Mean time per output token after the first
            (successful requests only).
        error_type: ``error.type`` when the operation failed (a low-cardinality
            class such as the exception's name or ``"timeout"``); added to the
            duration metrics, not to token usage.
        attributes: Further attributes for every point recorded.
    """
    target = _recording.resolve_meter(meter)
    if target is None:
        return
    if operation is None:  # the 0.1.0 call
        operation = operation_name if operation_name is not None else _DEFAULT_OPERATION
        if provider is None:
            provider = provider_name if provider_name is not None else _DEFAULT_PROVIDER
    elif provider is None:
        provider = provider_name
    base = _recording.merge_attributes(
        attributes,
        {
            sc.GEN_AI_OPERATION_NAME: operation,
            sc.GEN_AI_PROVIDER_NAME: provider,
            sc.GEN_AI_REQUEST_MODEL: model,
            sc.GEN_AI_RESPONSE_MODEL: response_model,
        },
    )
    if input_tokens is not None:
        input_attributes = {**base, sc.GEN_AI_TOKEN_TYPE: sc.GEN_AI_TOKEN_TYPE_INPUT}
        _recording.record(target, sc.GEN_AI_CLIENT_TOKEN_USAGE, input_tokens, input_attributes)
    if output_tokens is not None:
        output_attributes = {**base, sc.GEN_AI_TOKEN_TYPE: sc.GEN_AI_TOKEN_TYPE_OUTPUT}
        _recording.record(target, sc.GEN_AI_CLIENT_TOKEN_USAGE, output_tokens, output_attributes)
    timed = (
        base
        if error_type is None
        else _recording.merge_attributes(base, {sc.ERROR_TYPE: error_type})
    )
    _recording.record(target, sc.GEN_AI_CLIENT_OPERATION_DURATION, operation_duration_s, timed)
    _recording.record(target, sc.GEN_AI_SERVER_REQUEST_DURATION, request_duration_s, timed)
    _recording.record(target, sc.GEN_AI_SERVER_TIME_TO_FIRST_TOKEN, time_to_first_token_s, timed)
    _recording.record(
        target, sc.GEN_AI_SERVER_TIME_PER_OUTPUT_TOKEN, time_per_output_token_s, timed
    )


def record_rl_step_metrics(
    *,
    step: int | None = None,
    reward_mean: float | None = None,
    reward_std: float | None = None,
    reward_min: float | None = None,
    reward_max: float | None = None,
    step_duration_s: float | None = None,
    rollout_duration_s: float | None = None,
    generation_duration_s: float | None = None,
    policy_update_duration_s: float | None = None,
    generated_tokens: int | None = None,
    tokens_per_second: float | None = None,
    attributes: Mapping[str, object] | None = None,
    meter: metrics.Meter | None = None,
) -> None:
    """Record one RL training step; call it once per step, after the step.

    ============================== ==================================== ===========
    argument                       metric                               kind, unit
    ============================== ==================================== ===========
    ``step``                       ``nemo.rl.step``                     gauge, {step}
    ``reward_mean`` / ``_std`` /   ``nemo.rl.reward.mean`` / ``.std`` / gauge, 1
    ``_min`` / ``_max``            ``.min`` / ``.max``
    ``step_duration_s``            ``nemo.rl.step.duration``            histogram, s
    ``rollout_duration_s``         ``nemo.rl.rollout.duration``         histogram, s
    ``generation_duration_s``      ``nemo.rl.generation.duration``      histogram, s
    ``policy_update_duration_s``   ``nemo.rl.policy_update.duration``   histogram, s
    ``generated_tokens``           ``nemo.rl.generation.tokens``        counter, {token}
    ``tokens_per_second``          ``nemo.rl.generation.throughput``    gauge, {token}/s
    ============================== ==================================== ===========

    The step number is a gauge, not an attribute: an attribute per step would
    make every step its own time series. ``tokens_per_second`` defaults to
    ``generated_tokens / generation_duration_s`` when both are given and the
    duration is positive.

    Args:
        step: The step just finished.
        reward_mean: Mean reward over the step's samples (any sign).
        reward_std: Standard deviation of those rewards.
        reward_min: Lowest reward (any sign).
        reward_max: Highest reward (any sign).
        step_duration_s: The whole step.
        rollout_duration_s: The rollout phase (generation, environment, reward).
        generation_duration_s: The generation phase.
        policy_update_duration_s: The policy update (training) phase.
        generated_tokens: Tokens generated in the step (added to a counter).
        tokens_per_second: Generation throughput of the step.
        attributes: Further attributes for every point recorded.
        meter: Where to record; ``None`` is nemo.lens's meter.
    """
    target = _recording.resolve_meter(meter)
    if target is None:
        return
    common = _recording.merge_attributes(attributes, {})
    if tokens_per_second is None and generated_tokens is not None:
        tokens = _recording.as_number(generated_tokens)
        seconds = _recording.as_number(generation_duration_s)
        if tokens is not None and seconds is not None and seconds > 0:
            tokens_per_second = tokens / seconds
    for name, value in (
        (sc.RL_STEP, step),
        (sc.NEMO_RL_REWARD_MEAN, reward_mean),
        (sc.RL_REWARD_STD, reward_std),
        (sc.RL_REWARD_MIN, reward_min),
        (sc.RL_REWARD_MAX, reward_max),
        (sc.RL_STEP_DURATION, step_duration_s),
        (sc.RL_ROLLOUT_DURATION, rollout_duration_s),
        (sc.RL_GENERATION_DURATION, generation_duration_s),
        (sc.RL_POLICY_UPDATE_DURATION, policy_update_duration_s),
        (sc.RL_GENERATION_TOKENS, generated_tokens),
        (sc.RL_GENERATION_THROUGHPUT, tokens_per_second),
    ):
        _recording.record(target, name, value, common)


def record_gym_rollout_metrics(
    *,
    environment: str | None = None,
    agent: str | None = None,
    passed: bool | None = None,
    duration_s: float | None = None,
    verify_duration_s: float | None = None,
    tool_calls: int | None = None,
    sandbox_calls: int | None = None,
    error_type: str | None = None,
    attributes: Mapping[str, object] | None = None,
    meter: metrics.Meter | None = None,
) -> None:
    """Record one finished Gym rollout; call it exactly once per rollout.

    ========================= ==================================== ================
    argument                  metric                               kind, unit
    ========================= ==================================== ================
    (always)                  ``nemo.gym.rollouts``                counter, {rollout}
    ``duration_s``            ``nemo.gym.rollout.duration``        histogram, s
    ``verify_duration_s``     ``nemo.gym.verify.duration``         histogram, s
    ``tool_calls``            ``nemo.gym.rollout.tool_calls``      histogram, {call}
    ``sandbox_calls``         ``nemo.gym.rollout.sandbox_calls``   histogram, {call}
    ========================= ==================================== ================

    Every point carries ``nemo.gym.environment``, ``nemo.gym.agent``,
    ``nemo.gym.verify.passed`` and ``error.type`` when given, so a pass rate is
    ``nemo.gym.rollouts{nemo.gym.verify.passed=true}`` over all rollouts.

    Args:
        environment: The environment (resource server) the rollout ran in.
        agent: The agent that produced it.
        passed: The verification outcome; ``None`` when it was not verified.
        duration_s: The whole rollout, to its verified result.
        verify_duration_s: The verification alone.
        tool_calls: Tool calls the rollout made.
        sandbox_calls: Sandbox (code execution) calls the rollout made.
        error_type: ``error.type`` when the rollout failed.
        attributes: Further attributes for every point recorded.
        meter: Where to record; ``None`` is nemo.lens's meter.
    """
    target = _recording.resolve_meter(meter)
    if target is None:
        return
    common = _recording.merge_attributes(
        attributes,
        {
            sc.GYM_ENVIRONMENT: environment,
            sc.GYM_AGENT: agent,
            sc.GYM_VERIFY_PASSED: passed,
            sc.ERROR_TYPE: error_type,
        },
    )
    _recording.record(target, sc.GYM_ROLLOUTS, 1, common)
    _recording.record(target, sc.GYM_ROLLOUT_DURATION, duration_s, common)
    _recording.record(target, sc.GYM_VERIFY_DURATION, verify_duration_s, common)
    _recording.record(target, sc.GYM_ROLLOUT_TOOL_CALLS, tool_calls, common)
    _recording.record(target, sc.GYM_ROLLOUT_SANDBOX_CALLS, sandbox_calls, common)
