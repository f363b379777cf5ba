"""The metric recorders and what they share: instruments cached per meter, the default meter,
value and attribute checks, and problems reported once (never raising into the job).

The package (:mod:`nemo.lens.instruments`) and its 0.1.0 submodules re-export or call these.
"""

from __future__ import annotations

import logging
import math
import numbers
import reprlib
import threading
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import Final

from opentelemetry import metrics
from opentelemetry.util.types import AttributeValue

from nemo.lens import semconv as sc
from nemo.lens._core import fork as _fork
from nemo.lens._core import state as _state
from nemo.lens.semconv.metrics import INSTRUMENTS
from nemo.lens.spec import MetricInfo

__all__ = [
    "as_number",
    "create",
    "forget_reports",
    "instrument",
    "merge_attributes",
    "record",
    "record_as",
    "record_each",
    "record_gym_rollout_metrics",
    "record_inference_metrics",
    "record_rl_step_metrics",
    "report",
    "resolve_meter",
]

# The package's logger name: what users filter on.
_logger = logging.getLogger("nemo.lens.instruments")

# -- reporting problems once ----------------------------------------------------------

_reported: set[tuple[str, str]] = set()


def report(key: str, problem: str, message: str, *args: object, error: bool = False) -> None:
    """Log *message* as a warning the first time (*key*, *problem*) occurs, then at debug."""
    if (key, problem) in _reported:
        _logger.debug(message, *args, exc_info=error)
        return
    _reported.add((key, problem))
    _logger.warning(
        message + "; later occurrences are logged at debug level", *args, exc_info=error
    )


def forget_reports(key: str) -> None:
    """Let the problems of *key* and its ``key: ...`` sub-keys be warned about afresh
    (a metric group registered again may have fixed or changed them)."""
    prefix = key + ": "
    for reported in [r for r in _reported if r[0] == key or r[0].startswith(prefix)]:
        _reported.discard(reported)


# -- instruments, cached per meter ----------------------------------------------------

_Record = Callable[[float, Mapping[str, AttributeValue]], None]
Callback = metrics.CallbackT


def _discard(value: float, attributes: Mapping[str, AttributeValue]) -> None:
    """Stands in for an instrument that could not be created, so creation is tried once."""


# Per meter: name -> (what the instrument was made from, its callback, its record method).
_Cached = tuple[MetricInfo, Callback | None, _Record]
_instruments: weakref.WeakKeyDictionary[metrics.Meter, dict[str, _Cached]] = (
    weakref.WeakKeyDictionary()
)
_instruments_lock = threading.Lock()


def _new_lock_in_child() -> None:
    global _instruments_lock
    _instruments_lock = threading.Lock()


# A lock another thread held at a fork stays held in the child.
_fork.on_fork(after_in_child=_new_lock_in_child)


def create(
    meter: metrics.Meter, instrument: str | MetricInfo, callback: Callback | None = None
) -> _Record:
    """The recording method of a new *instrument*: a :class:`MetricInfo`, or the name of one
    in the schema's catalogue. An observable one (reported by *callback*) records nothing."""
    info = INSTRUMENTS[instrument] if isinstance(instrument, str) else instrument
    name, kind, unit, description = info.name, info.kind, info.unit, info.description
    try:
        if kind == "counter":
            return meter.create_counter(name, unit, description).add
        if kind == "up_down_counter":
            return meter.create_up_down_counter(name, unit, description).add
        if kind == "gauge":
            return meter.create_gauge(name, unit, description).set
        if kind == "histogram":
            return meter.create_histogram(
                name, unit, description, explicit_bucket_boundaries_advisory=info.boundaries
            ).record
        factory = getattr(meter, f"create_{kind}")
        # The meter keeps the callback; the cache entry keeps the instrument alive.
        observable = factory(
            name, callbacks=[callback] if callback else [], unit=unit, description=description
        )
        return _Observed(observable)
    except Exception:
        report(name, "create", "nemo.lens: could not create metric %s", name, error=True)
        return _discard


class _Observed:
    """An observable instrument in the cache: holds it, and records nothing when called."""

    __slots__ = ("instrument",)

    def __init__(self, instrument: object) -> None:
        self.instrument = instrument

    def __call__(self, value: float, attributes: Mapping[str, AttributeValue]) -> None:
        pass


def instrument(meter: metrics.Meter, info: MetricInfo, callback: Callback | None = None) -> _Record:
    try:
        cached = _instruments[meter].get(info.name)
    except KeyError:
        cached = None
    except TypeError:  # a meter that cannot be weakly referenced: work uncached
        report(
            type(meter).__name__,
            "cache",
            "nemo.lens: cannot cache instruments for meter %r (not weakly referenceable); "
            "each record creates its instruments again",
            meter,
        )
        return create(meter, info, callback)
    # Cached by name with the description it was made from: a metric group registered
    # again with another kind or unit gets a new instrument, not the old one.
    if cached is not None and _same(cached, info, callback):
        return cached[2]
    # Created under a lock: two threads creating the same instrument would make
    # the SDK log a duplicate-registration warning and keep only one of them.
    with _instruments_lock:
        per_meter = _instruments.setdefault(meter, {})
        found = per_meter.get(info.name)
        if found is None or not _same(found, info, callback):
            found = per_meter[info.name] = (info, callback, create(meter, info, callback))
        return found[2]


def _same(cached: _Cached, info: MetricInfo, callback: Callback | None) -> bool:
    return (cached[0] is info or cached[0] == info) and cached[1] is callback


# -- the default meter ----------------------------------------------------------------

# (source, meter): the source is the current handle while nemo.lens is set up, else the
# global meter provider the meter came from (handle.get_meter() is not called per record).
_default: tuple[object, metrics.Meter] | None = None


def _default_meter() -> metrics.Meter:
    global _default
    handle = _state.current_handle()
    source: object = handle if handle is not None else metrics.get_meter_provider()
    cached = _default
    if cached is not None and cached[0] is source:
        return cached[1]
    from nemo.lens.handle import get_meter

    meter = get_meter()
    _default = (source, meter)
    return meter


def resolve_meter(meter: metrics.Meter | None) -> metrics.Meter | None:
    if meter is not None:
        return meter
    try:
        return _default_meter()
    except Exception:
        report("meter", "default", "nemo.lens: could not get the default meter", error=True)
        return None


# -- values and attributes ------------------------------------------------------------


def as_number(value: object) -> int | float | None:
    """Return *value* as a finite ``int`` or ``float``, or ``None`` when it is not one."""
    # Plain ints and floats first: the abstract numbers.Real check costs more than
    # the rest of this function for the values nearly every caller passes.
    if type(value) is int:
        return value
    if type(value) is float:
        return value if math.isfinite(value) else None
    if isinstance(value, bool):
        return None
    if not isinstance(value, numbers.Real):
        item = getattr(value, "item", None)  # NumPy scalars, one-element tensors
        if not callable(item):
            return None
        try:
            value = item()
        except Exception:
            return None
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            return None
    if isinstance(value, numbers.Integral):
        return int(value)
    number = float(value)
    return number if math.isfinite(number) else None


def merge_attributes(
    extra: Mapping[str, object] | None, known: Mapping[str, object]
) -> dict[str, AttributeValue]:
    """Merge the caller's *extra* attributes and the helper's *known* ones (which win)."""
    merged: dict[str, AttributeValue] = {}
    for source in (extra or {}, known):
        for key, value in source.items():
            if value is None:
                continue
            if isinstance(value, (str, bool, int, float)):
                merged[key] = value
            else:
                report(
                    str(key),
                    "attribute",
                    "nemo.lens: dropping metric attribute %r: %s is not a str, bool, int or float",
                    key,
                    type(value).__name__,
                )
    return merged


def record(
    meter: metrics.Meter, name: str, value: object, attributes: Mapping[str, AttributeValue]
) -> None:
    record_as(meter, INSTRUMENTS[name], value, attributes)


def record_as(
    meter: metrics.Meter,
    info: MetricInfo,
    value: object,
    attributes: Mapping[str, AttributeValue],
    *,
    key: str | None = None,
) -> None:
    """Record *value* on the instrument *info* describes; problems are reported once per
    *key* (default: the metric's name)."""
    if value is None:
        return
    name = info.name
    problem_key = name if key is None else key
    number = as_number(value)
    if number is None or (info.non_negative and number < 0):
        requirement = "a finite, non-negative number" if info.non_negative else "a finite number"
        report(
            problem_key,
            "value",
            "nemo.lens: skipping %s for metric %s (needs %s)",
            reprlib.repr(value),
            name,
            requirement,
        )
        return
    try:
        instrument(meter, info)(number, attributes)
    except Exception:
        report(problem_key, "record", "nemo.lens: recording metric %s failed", name, error=True)


_NO_ATTRIBUTES: Final[Mapping[str, AttributeValue]] = {}


def record_each(
    meter: metrics.Meter | None,
    values: Sequence[tuple[str, object]],
    attributes: Mapping[str, AttributeValue] = _NO_ATTRIBUTES,
) -> None:
    """Record each ``(metric, value)`` pair with *attributes* (none: the 0.1.0 helpers)."""
    target = resolve_meter(meter)
    if target is None:
        return
    for name, value in values:
        record(target, name, value, attributes)


# -- the recorders ----------------------------------------------------------------------

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

    Each measurement goes to its own metric; ``None`` records nothing. The ``client``
    metrics describe the call as its caller saw it, the ``server`` ones the request inside
    the engine that generated it. The first seven parameters are also 0.1.0's, in its
    order; without ``operation=``, 0.1.0's defaults apply (*operation_name* or
    ``"text_completion"``, *provider_name* or ``"nemo"``).

    Args:
        meter: Where to record; ``None`` is nemo.lens's meter.
        request_duration_s: ``gen_ai.server.request.duration`` (s), as the server measured it.
        model: ``gen_ai.request.model``, the model asked for.
        input_tokens: ``gen_ai.client.token.usage`` with ``gen_ai.token.type=input``.
        output_tokens: ``gen_ai.client.token.usage`` with ``gen_ai.token.type=output``.
        provider_name: 0.1.0's name for *provider*.
        operation_name: 0.1.0's name for *operation*.
        operation: ``gen_ai.operation.name`` (``"chat"``, ``"text_completion"``, ...).
        response_model: ``gen_ai.response.model``, the model that answered.
        provider: ``gen_ai.provider.name`` (``"vllm"``, ``"openai"``, ...).
        operation_duration_s: ``gen_ai.client.operation.duration`` (s), as the caller
            measured it.
        time_to_first_token_s: ``gen_ai.server.time_to_first_token`` (s; successful
            requests only).
        time_per_output_token_s: ``gen_ai.server.time_per_output_token`` (s; mean after
            the first token, successful requests only).
        error_type: ``error.type`` when the operation failed (a low-cardinality class);
            added to the duration metrics, not to token usage.
        attributes: Further attributes for every point recorded.
    """
    target = resolve_meter(meter)
    if target is None:
        return
    if operation is None:  # the 0.1.0 call
        operation = operation_name if operation_name is not None else _DEFAULT_OPERATION
        if provider is None:
            provider = provider_name if provider_name is not None else _DEFAULT_PROVIDER
    elif provider is None:
        provider = provider_name
    base = merge_attributes(
        attributes,
        {
            sc.GEN_AI_OPERATION_NAME: operation,
            sc.GEN_AI_PROVIDER_NAME: provider,
            sc.GEN_AI_REQUEST_MODEL: model,
            sc.GEN_AI_RESPONSE_MODEL: response_model,
        },
    )
    for tokens, token_type in (
        (input_tokens, sc.GEN_AI_TOKEN_TYPE_INPUT),
        (output_tokens, sc.GEN_AI_TOKEN_TYPE_OUTPUT),
    ):
        if tokens is not None:
            typed = {**base, sc.GEN_AI_TOKEN_TYPE: token_type}
            record(target, sc.GEN_AI_CLIENT_TOKEN_USAGE, tokens, typed)
    timed = base if error_type is None else merge_attributes(base, {sc.ERROR_TYPE: error_type})
    for name, value in (
        (sc.GEN_AI_CLIENT_OPERATION_DURATION, operation_duration_s),
        (sc.GEN_AI_SERVER_REQUEST_DURATION, request_duration_s),
        (sc.GEN_AI_SERVER_TIME_TO_FIRST_TOKEN, time_to_first_token_s),
        (sc.GEN_AI_SERVER_TIME_PER_OUTPUT_TOKEN, time_per_output_token_s),
    ):
        record(target, name, value, timed)


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
    """Record one RL training step (``nemo.rl.*``); call it once per step, after the step.

    The step number is a gauge, not an attribute (an attribute per step would make every
    step its own time series). ``tokens_per_second`` defaults to ``generated_tokens /
    generation_duration_s`` when both are given and the duration is positive.

    Args:
        step: ``nemo.rl.step`` (gauge), the step just finished.
        reward_mean: ``nemo.rl.reward.mean`` (gauge, any sign); likewise *reward_std*,
            *reward_min* and *reward_max* (``.std``, ``.min``, ``.max``).
        step_duration_s: ``nemo.rl.step.duration`` (histogram, s), the whole step.
        rollout_duration_s: ``nemo.rl.rollout.duration``: generation, environment, reward.
        generation_duration_s: ``nemo.rl.generation.duration``.
        policy_update_duration_s: ``nemo.rl.policy_update.duration``, the training phase.
        generated_tokens: ``nemo.rl.generation.tokens`` (counter).
        tokens_per_second: ``nemo.rl.generation.throughput`` (gauge, {token}/s).
        attributes: Further attributes for every point recorded.
        meter: Where to record; ``None`` is nemo.lens's meter.
    """
    if tokens_per_second is None and generated_tokens is not None:
        tokens = as_number(generated_tokens)
        seconds = as_number(generation_duration_s)
        if tokens is not None and seconds is not None and seconds > 0:
            tokens_per_second = tokens / seconds
    pairs = (
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
    )
    record_each(meter, pairs, merge_attributes(attributes, {}))


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
    """Record one finished Gym rollout (``nemo.gym.*``); call it exactly once per rollout.

    Always counts ``nemo.gym.rollouts``; every point carries the environment, agent,
    verification outcome and error type when given, so a pass rate is
    ``nemo.gym.rollouts{nemo.gym.verify.passed=true}`` over all rollouts.

    Args:
        environment: ``nemo.gym.environment``, the resource server the rollout ran in.
        agent: ``nemo.gym.agent``, the agent that produced it.
        passed: ``nemo.gym.verify.passed``; ``None`` when it was not verified.
        duration_s: ``nemo.gym.rollout.duration`` (histogram, s), to its verified result.
        verify_duration_s: ``nemo.gym.verify.duration`` (histogram, s).
        tool_calls: ``nemo.gym.rollout.tool_calls`` (histogram).
        sandbox_calls: ``nemo.gym.rollout.sandbox_calls`` (histogram).
        error_type: ``error.type`` when the rollout failed.
        attributes: Further attributes for every point recorded.
        meter: Where to record; ``None`` is nemo.lens's meter.
    """
    known = {
        sc.GYM_ENVIRONMENT: environment,
        sc.GYM_AGENT: agent,
        sc.GYM_VERIFY_PASSED: passed,
        sc.ERROR_TYPE: error_type,
    }
    pairs = (
        (sc.GYM_ROLLOUTS, 1),
        (sc.GYM_ROLLOUT_DURATION, duration_s),
        (sc.GYM_VERIFY_DURATION, verify_duration_s),
        (sc.GYM_ROLLOUT_TOOL_CALLS, tool_calls),
        (sc.GYM_ROLLOUT_SANDBOX_CALLS, sandbox_calls),
    )
    record_each(meter, pairs, merge_attributes(attributes, known))
