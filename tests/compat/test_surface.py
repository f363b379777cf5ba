"""The 0.1.0 module surface (COMPAT.md §1): import paths, signatures, argument order, results."""

from __future__ import annotations

import importlib
import inspect
import json
import logging
import subprocess
import sys
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from opentelemetry import metrics, trace
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader, Metric
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import Sampler

import nemo.lens
from nemo.lens import NemoLensConfig, semconv, setup_telemetry, testing
from nemo.lens.groups import SpanGroup
from nemo.lens.handle import TelemetryHandle
from nemo.lens.sampling import RankAwareSampler
from nemo.lens.state import enabled_span_groups, set_enabled_span_groups
from nemo.lens.strategies import (
    BUILTIN_STRATEGIES,
    get_export_strategy,
    register_export_strategy,
    registered_strategies,
    unregister_export_strategy,
)

_REQUIRED = inspect.Parameter.empty

# -- import paths ------------------------------------------------------------------------

_NAMES = {
    "nemo.lens.config": ["NemoLensConfig"],
    "nemo.lens.strategies": [
        "ExportStrategy",
        "register_export_strategy",
        "unregister_export_strategy",
        "registered_strategies",
        "get_export_strategy",
        "BUILTIN_STRATEGIES",
    ],
    "nemo.lens.handle": ["TelemetryHandle", "setup_telemetry"],
    "nemo.lens.sampling": ["RankAwareSampler"],
    "nemo.lens.providers": ["build_providers", "build_noop_providers"],
    "nemo.lens.resources": ["detect_resource"],
    "nemo.lens.resources.local": ["detect_local"],
    "nemo.lens.resources.slurm": ["detect_slurm"],
    "nemo.lens.resources.kubernetes": ["detect_kubernetes"],
    "nemo.lens.instruments": ["record_inference_metrics"],
    "nemo.lens.instruments.inference": ["record_inference_metrics"],
    "nemo.lens.instruments.rl": ["record_rl_metrics"],
    "nemo.lens.instruments.gym": ["record_gym_metrics"],
    "nemo.lens.logging_bridge": ["setup_logging_bridge"],
    "nemo.lens.state": [
        "is_span_group_enabled",
        "set_enabled_span_groups",
        "set_pp_trace_carrier",
        "get_pp_trace_carrier",
    ],
    "nemo.lens.contrib.fastapi": ["instrument_fastapi"],
    "nemo.lens.contrib.aiohttp": ["instrument_aiohttp_client"],
    "nemo.lens.contrib.ray": [
        "inject_ray_context",
        "extract_ray_context",
        "traced_remote_call",
        "ray_dispatch_with_context",
    ],
    "nemo.lens.contrib.nccl": ["serialize_context", "deserialize_context", "extract_nccl_context"],
    "nemo.lens.span_utilities": ["emit_span"],
    "nemo.lens": ["emit_span"],
}


@pytest.mark.parametrize(
    ("module", "name"), [(module, name) for module, names in _NAMES.items() for name in names]
)
def test_every_0_1_0_name_imports_from_its_module(module: str, name: str) -> None:
    assert getattr(importlib.import_module(module), name) is not None


def test_the_instruments_package_keeps_what_it_exported() -> None:
    instruments = importlib.import_module("nemo.lens.instruments")
    for name in (
        "record_inference_metrics",
        "record_rl_step_metrics",
        "record_gym_rollout_metrics",
    ):
        assert name in instruments.__all__
        assert callable(getattr(instruments, name))
    for module in ("inference", "rl", "gym"):
        assert getattr(instruments, module) is importlib.import_module(
            f"nemo.lens.instruments.{module}"
        )


def test_emit_span_is_one_function_at_both_paths() -> None:
    from nemo.lens.span_utilities import emit_span

    assert nemo.lens.emit_span is emit_span
    assert "emit_span" in nemo.lens.__all__


# -- signatures --------------------------------------------------------------------------


def _positional(function: Callable[..., Any]) -> list[tuple[str, object]]:
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return [
        (parameter.name, parameter.default)
        for parameter in inspect.signature(function).parameters.values()
        if parameter.kind in kinds
    ]


def _module_function(path: str) -> Callable[..., Any]:
    module, _, name = path.rpartition(".")
    function: Callable[..., Any] = getattr(importlib.import_module(module), name)
    return function


# 0.1.0's parameters, in 0.1.0's order, with 0.1.0's defaults (_REQUIRED: none).
_SIGNATURES: dict[str, list[tuple[str, object]]] = {
    "nemo.lens.handle.setup_telemetry": [
        ("config", _REQUIRED),
        ("rank", 0),
        ("world_size", 1),
        ("resource_attributes", None),
        ("span_exporter", None),
        ("metric_reader", None),
        ("export_strategy", None),
        ("_allow_reinit", False),
    ],
    "nemo.lens.providers.build_providers": [
        ("config", _REQUIRED),
        ("rank", 0),
        ("world_size", 1),
        ("resource_attributes", None),
        ("span_exporter", None),
        ("metric_reader", None),
    ],
    "nemo.lens.instruments.inference.record_inference_metrics": [
        ("meter", _REQUIRED),
        ("request_duration_s", None),
        ("model", None),
        ("input_tokens", None),
        ("output_tokens", None),
        ("provider_name", "nemo"),
        ("operation_name", "text_completion"),
    ],
    # record_rl_metrics follows v0.2.0's order, which broke 0.1.0's: test_v0_2_0.py.
    "nemo.lens.instruments.gym.record_gym_metrics": [
        ("meter", _REQUIRED),
        ("server_request_duration_ms", None),
        ("rollout_duration_ms", None),
        ("verify_duration_ms", None),
        ("verify_success_rate", None),
        ("active_servers", None),
    ],
    "nemo.lens.logging_bridge.setup_logging_bridge": [
        ("logger_name", ""),
        ("level", logging.INFO),
    ],
    "nemo.lens.config.NemoLensConfig.from_env": [
        ("prefix", "NEMO_LENS"),
        ("fallback_prefix", None),
        ("span_group_cls", None),
    ],
    "nemo.lens.contrib.ray.extract_ray_context": [("carrier", None)],
    "nemo.lens.contrib.ray.traced_remote_call": [("method", None), ("tracer", None)],
    "nemo.lens.helpers.span_cm": [
        ("name", _REQUIRED),
        ("tracer", None),
        ("record_exception", True),
        ("group", None),
    ],
}


@pytest.mark.parametrize("path", sorted(_SIGNATURES))
def test_0_1_0_parameters_come_in_0_1_0_order_with_0_1_0_defaults(path: str) -> None:
    if path.startswith("nemo.lens.config.NemoLensConfig."):
        function: Callable[..., Any] = NemoLensConfig.from_env
    else:
        function = _module_function(path)
    expected = _SIGNATURES[path]
    actual = _positional(function)[: len(expected)]
    if path.endswith("traced_remote_call"):
        # 0.1.0 required the method; ours may omit it: @traced_remote_call(name=...).
        assert [name for name, _ in actual] == [name for name, _ in expected]
        return
    assert actual == expected


def test_0_1_0_keyword_only_parameters() -> None:
    register = inspect.signature(register_export_strategy).parameters
    assert register["allow_override"].kind is inspect.Parameter.KEYWORD_ONLY
    assert register["allow_override"].default is False
    dispatch = inspect.signature(
        _module_function("nemo.lens.contrib.ray.ray_dispatch_with_context")
    )
    assert [p.kind for p in dispatch.parameters.values()] == [
        inspect.Parameter.POSITIONAL_OR_KEYWORD,
        inspect.Parameter.VAR_POSITIONAL,
        inspect.Parameter.KEYWORD_ONLY,
        inspect.Parameter.VAR_KEYWORD,
    ]
    assert dispatch.parameters["_carrier"].default is None


def test_emit_span_has_the_documented_signature() -> None:
    from nemo.lens.span_utilities import emit_span

    parameters = inspect.signature(emit_span).parameters
    assert [(name, p.kind, p.default) for name, p in parameters.items()] == [
        ("tracer", inspect.Parameter.POSITIONAL_OR_KEYWORD, _REQUIRED),
        ("name", inspect.Parameter.POSITIONAL_OR_KEYWORD, _REQUIRED),
        ("start_epoch_seconds", inspect.Parameter.POSITIONAL_OR_KEYWORD, _REQUIRED),
        ("end_epoch_seconds", inspect.Parameter.POSITIONAL_OR_KEYWORD, _REQUIRED),
        ("group", inspect.Parameter.KEYWORD_ONLY, None),
        ("context", inspect.Parameter.KEYWORD_ONLY, None),
        ("attributes", inspect.Parameter.KEYWORD_ONLY, None),
    ]


# -- export strategies: the callable, in 0.1.0's argument order ----------------------------


def _config(**fields: Any) -> NemoLensConfig:
    fields.setdefault("enabled", True)
    fields.setdefault("exporter", "none")
    fields.setdefault("metrics_enabled", False)
    return NemoLensConfig(**fields)


def test_a_registered_strategy_is_called_with_config_rank_world_size() -> None:
    calls: list[tuple[type, int, int]] = []

    def third_rank(config: NemoLensConfig, rank: int, world_size: int) -> bool:
        calls.append((type(config), rank, world_size))
        return rank == 2

    register_export_strategy("third_rank", third_rank)
    assert get_export_strategy("third_rank") is third_rank  # exactly what was registered

    exporting = []
    for rank in range(4):
        handle = setup_telemetry(
            _config(export_strategy="third_rank"),
            rank=rank,
            world_size=4,
            span_exporter=InMemorySpanExporter(),
            _allow_reinit=True,
        )
        exporting.append(handle.is_exporting)
    handle.shutdown()
    assert calls == [(NemoLensConfig, rank, 4) for rank in range(4)]
    assert exporting == [False, False, True, False]


def test_setup_telemetry_takes_a_strategy_callable() -> None:
    seen: list[object] = []

    def everyone(config: NemoLensConfig, rank: int, world_size: int) -> bool:
        seen.append(config)
        return True

    handle = setup_telemetry(
        _config(),
        rank=1,
        world_size=3,
        export_strategy=everyone,
        span_exporter=InMemorySpanExporter(),
    )
    assert handle.is_exporting is True
    assert len(seen) == 1 and isinstance(seen[0], NemoLensConfig)


def test_a_lambda_strategy_without_names_is_called_the_0_1_0_way() -> None:
    register_export_strategy("by_config", lambda c, r, w: r == c.export_rank and w == 2)
    exporting = [
        setup_telemetry(
            _config(export_strategy="by_config", export_rank=1),
            rank=rank,
            world_size=2,
            span_exporter=InMemorySpanExporter(),
            _allow_reinit=True,
        ).is_exporting
        for rank in range(2)
    ]
    assert exporting == [False, True]


def test_a_function_whose_first_parameter_is_rank_keeps_the_0_2_order() -> None:
    def last_two(rank: int, world_size: int, config: NemoLensConfig) -> bool:
        return rank >= world_size - 2

    register_export_strategy("last_two", last_two)
    exporting = [
        setup_telemetry(
            _config(export_strategy="last_two"),
            rank=rank,
            world_size=4,
            span_exporter=InMemorySpanExporter(),
            _allow_reinit=True,
        ).is_exporting
        for rank in range(4)
    ]
    assert exporting == [False, False, True, True]


def test_the_built_in_strategies_are_callables_too() -> None:
    config = NemoLensConfig(export_rank=-1)
    single = get_export_strategy("single_rank")
    assert [single(config, rank, 4) for rank in range(4)] == [False, False, False, True]
    assert get_export_strategy("all_ranks")(config, 0, 4) is True
    assert sorted(BUILTIN_STRATEGIES) == registered_strategies()


def test_export_strategy_is_the_type_of_both_forms() -> None:
    from nemo.lens import ExportStrategy

    class EveryRank:
        def should_export(self, rank: int, world_size: int, config: NemoLensConfig) -> bool:
            return True

    assert isinstance(_strategy, ExportStrategy)  # the 0.1.0 callable
    assert isinstance(EveryRank(), ExportStrategy)  # an object with should_export
    assert isinstance(get_export_strategy("single_rank"), ExportStrategy)
    assert not isinstance(42, ExportStrategy)
    assert not isinstance("single_rank", ExportStrategy)


def test_registered_strategies_is_a_sorted_list_of_names() -> None:
    register_export_strategy("zeta", lambda config, rank, world_size: True)
    register_export_strategy("alpha", lambda config, rank, world_size: True)
    names = registered_strategies()
    assert isinstance(names, list)
    assert names == sorted(names)
    assert {"alpha", "zeta"} <= set(names)
    assert all(isinstance(name, str) for name in names)


def test_allow_override_replaces_a_strategy_even_a_built_in() -> None:
    def never(config: NemoLensConfig, rank: int, world_size: int) -> bool:
        return False

    def always(config: NemoLensConfig, rank: int, world_size: int) -> bool:
        return True

    register_export_strategy("mine", never)
    register_export_strategy("mine", always, allow_override=True)
    assert get_export_strategy("mine") is always
    register_export_strategy("all_ranks", never, allow_override=True)
    assert get_export_strategy("all_ranks") is never
    with pytest.raises(ValueError, match="built-in"):
        unregister_export_strategy("all_ranks")


# -- the message phrases -----------------------------------------------------------------

_UNKNOWN = "no_such_name_anywhere"


def _error(action: Callable[[], object]) -> str:
    with pytest.raises((ValueError, RuntimeError, TypeError)) as info:
        action()
    return str(info.value)


def _strategy(config: NemoLensConfig, rank: int, world_size: int) -> bool:
    return True


def _register_twice() -> None:
    register_export_strategy("taken", _strategy)
    register_export_strategy("taken", _strategy)


def _second_set_up() -> object:
    setup_telemetry(_config())
    return setup_telemetry(_config())


_PHRASES: dict[str, tuple[Callable[[], object], str]] = {
    "unknown span group or preset": (
        lambda: SpanGroup.resolve(_UNKNOWN),
        f"Unknown span group or preset: {_UNKNOWN!r}",
    ),
    "second enabled set-up": (_second_set_up, "has already been initialised"),
    "unknown strategy": (
        lambda: get_export_strategy(_UNKNOWN),
        f"Unknown export_strategy {_UNKNOWN!r}",
    ),
    "unknown strategy at set-up": (
        lambda: setup_telemetry(_config(export_strategy=_UNKNOWN)),
        f"Unknown export_strategy {_UNKNOWN!r}",
    ),
    "empty strategy name": (lambda: register_export_strategy("", _strategy), "non-empty"),
    "registering a taken name": (_register_twice, "already registered"),
    "registering a built-in name": (
        lambda: register_export_strategy(next(iter(BUILTIN_STRATEGIES)), _strategy),
        "already registered",
    ),
    "unregistering a built-in": (
        lambda: unregister_export_strategy(next(iter(BUILTIN_STRATEGIES))),
        "built-in",
    ),
    "unregistering an unknown name": (
        lambda: unregister_export_strategy(_UNKNOWN),
        "not registered",
    ),
    "exporter name": (
        lambda: NemoLensConfig(exporter="zipkin"),
        "Unknown exporter type: 'zipkin'",
    ),
}


@pytest.mark.parametrize("situation", sorted(_PHRASES))
def test_errors_carry_the_0_1_0_phrase(situation: str) -> None:
    action, phrase = _PHRASES[situation]
    message = _error(action)
    assert phrase in message
    for later in ("did you mean", "valid groups", "registered strategies", "use one of"):
        if later in message:
            assert message.index(phrase) < message.index(later), message


def test_errors_keep_our_own_phrases_too() -> None:
    assert f"unknown export strategy {_UNKNOWN!r}" in _error(lambda: get_export_strategy(_UNKNOWN))
    assert "unknown exporter 'zipkin'" in _error(lambda: NemoLensConfig(exporter="zipkin"))
    assert "was already called in this process" in _error(_second_set_up)
    assert f"unknown span group or preset {_UNKNOWN!r}" in _error(
        lambda: SpanGroup.resolve(_UNKNOWN)
    )


def test_an_exporter_name_from_the_environment_carries_the_phrase(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("NEMO_LENS_EXPORTER", "zipkin")
    message = _error(NemoLensConfig.from_env)
    assert "NEMO_LENS_EXPORTER='zipkin'" in message
    assert "Unknown exporter type: 'zipkin'" in message


# -- RankAwareSampler(rank, world_size, sample_rate) ---------------------------------------


def _sampled_names(sampler: Sampler, count: int = 20) -> list[str]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider(sampler=sampler)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("test")
    for i in range(count):
        with tracer.start_as_current_span(f"s{i}"):
            pass
    provider.shutdown()
    return [span.name for span in exporter.get_finished_spans()]


def test_the_0_1_0_sampler_describes_itself_as_0_1_0_did() -> None:
    assert RankAwareSampler(1, 4, 0.25).get_description() == "RankAwareSampler(rank=1, rate=0.25)"
    keywords = RankAwareSampler(rank=1, world_size=4, sample_rate=0.25)
    assert keywords.get_description() == "RankAwareSampler(rank=1, rate=0.25)"
    assert RankAwareSampler(3, 8).get_description() == "RankAwareSampler(rank=3, rate=1.0)"
    assert isinstance(RankAwareSampler(0, 1), Sampler)


def test_the_0_1_0_sampler_takes_one_decision_for_every_span() -> None:
    assert len(_sampled_names(RankAwareSampler(2, 4))) == 20  # rate 1.0: every rank
    assert _sampled_names(RankAwareSampler(2, 4, 0.0)) == []  # rate 0.0: no rank
    for rank in range(16):
        count = len(_sampled_names(RankAwareSampler(rank, 16, 0.5), count=10))
        assert count in (0, 10), f"rank {rank} sampled {count} of 10 spans"


def test_the_0_1_0_sampler_is_deterministic_per_rank_and_near_its_rate() -> None:
    sampled = [RankAwareSampler(rank, 2000, 0.25).sampled for rank in range(2000)]
    again = [RankAwareSampler(rank, 2000, 0.25).sampled for rank in range(2000)]
    assert sampled == again
    assert 400 <= sum(sampled) <= 600  # 25 % of 2000, with a wide margin


def test_the_0_1_0_sampler_rejects_nonsense_with_the_fix() -> None:
    with pytest.raises(ValueError, match="between 0 and 1"):
        RankAwareSampler(0, 2, 1.5)
    with pytest.raises(ValueError, match="out of range for world_size 2"):
        RankAwareSampler(2, 2)
    with pytest.raises(TypeError, match="must be an int"):
        RankAwareSampler("0", 2)  # type: ignore[call-overload]


# -- config, handle, state, providers ----------------------------------------------------


def test_resolved_span_groups_is_the_spec_resolved_on_access() -> None:
    preset = sorted(SpanGroup.PRESETS)[0]
    config = NemoLensConfig(span_groups=preset)
    assert config.resolved_span_groups == SpanGroup.resolve(preset)
    assert isinstance(config.resolved_span_groups, frozenset)
    config.span_groups = "all"
    assert config.resolved_span_groups == SpanGroup.ALL_GROUPS


def test_telemetry_handle_takes_0_1_0s_constructor() -> None:
    tracer = trace.NoOpTracer()
    meter = MeterProvider().get_meter("test")
    handle = TelemetryHandle(tracer, meter, True)
    assert handle.tracer is tracer
    assert handle.meter is meter
    assert handle.is_exporting is True
    assert TelemetryHandle(tracer, meter).is_exporting is False
    handle.shutdown()  # installed nothing: nothing to do, no error


def test_the_pipeline_parallel_trace_carrier_is_kept() -> None:
    from nemo.lens.state import get_pp_trace_carrier, set_pp_trace_carrier

    assert get_pp_trace_carrier() is None
    carrier = {"traceparent": "00-" + "1" * 32 + "-" + "2" * 16 + "-01"}
    set_pp_trace_carrier(carrier)
    assert get_pp_trace_carrier() is carrier
    set_pp_trace_carrier(None)
    assert get_pp_trace_carrier() is None


@pytest.fixture
def no_groups() -> Iterator[None]:
    set_enabled_span_groups(())
    yield


def test_build_providers_installs_what_set_up_installs_on_an_exporting_rank(
    no_groups: None,
) -> None:
    from nemo.lens.providers import build_noop_providers, build_providers

    exporter = InMemorySpanExporter()
    # Disabled and rank 0 of 4 under single_rank: build_providers exports anyway.
    handle = build_providers(NemoLensConfig(metrics_enabled=False), 0, 4, span_exporter=exporter)
    assert handle.is_exporting is True
    assert enabled_span_groups() == frozenset()  # groups are set-up's business, not this one's
    nemo.lens.get_tracer().start_span("through.the.provider").end()
    assert [span.name for span in exporter.get_finished_spans()] == ["through.the.provider"]

    build_noop_providers()
    nemo.lens.get_tracer().start_span("after.noop").end()
    assert [span.name for span in exporter.get_finished_spans()] == ["through.the.provider"]
    # As upstream's helper: OpenTelemetry's globals are its no-op providers now.
    assert isinstance(trace.get_tracer_provider(), trace.NoOpTracerProvider)
    assert isinstance(metrics.get_meter_provider(), metrics.NoOpMeterProvider)
    build_noop_providers()  # nothing installed: harmless
    again = InMemorySpanExporter()
    handle = build_providers(NemoLensConfig(metrics_enabled=False), span_exporter=again)
    trace.get_tracer("next").start_span("after.the.next.set-up").end()
    assert [span.name for span in again.get_finished_spans()] == ["after.the.next.set-up"]
    handle.shutdown()


# -- instruments -------------------------------------------------------------------------


def _metrics(reader: InMemoryMetricReader) -> dict[str, Metric]:
    data = reader.get_metrics_data()
    found: dict[str, Metric] = {}
    if data is None:
        return found
    for resource_metrics in data.resource_metrics:
        for scope in resource_metrics.scope_metrics:
            for metric in scope.metrics:
                found[metric.name] = metric
    return found


def _provider_and_reader() -> tuple[MeterProvider, InMemoryMetricReader]:
    reader = InMemoryMetricReader()
    return MeterProvider(metric_readers=[reader]), reader


@pytest.mark.parametrize("module", ["nemo.lens.instruments", "nemo.lens.instruments.inference"])
def test_record_inference_metrics_called_the_0_1_0_way(module: str) -> None:
    record = importlib.import_module(module).record_inference_metrics
    provider, reader = _provider_and_reader()
    record(provider.get_meter("app"), 0.5, "llama", 12, 30)
    found = _metrics(reader)
    assert set(found) == {
        semconv.GEN_AI_SERVER_REQUEST_DURATION,
        semconv.GEN_AI_CLIENT_TOKEN_USAGE,
    }
    for point in found[semconv.GEN_AI_CLIENT_TOKEN_USAGE].data.data_points:
        attributes = dict(point.attributes or {})
        assert attributes[semconv.GEN_AI_OPERATION_NAME] == "text_completion"
        assert attributes[semconv.GEN_AI_PROVIDER_NAME] == "nemo"
        assert attributes[semconv.GEN_AI_REQUEST_MODEL] == "llama"
    tokens = {
        dict(point.attributes or {})[semconv.GEN_AI_TOKEN_TYPE]: point.sum  # type: ignore[union-attr]
        for point in found[semconv.GEN_AI_CLIENT_TOKEN_USAGE].data.data_points
    }
    assert tokens == {semconv.GEN_AI_TOKEN_TYPE_INPUT: 12, semconv.GEN_AI_TOKEN_TYPE_OUTPUT: 30}
    provider.shutdown()


def test_the_0_1_0_rl_and_gym_helpers_record_under_0_1_0_names() -> None:
    from nemo.lens.instruments.gym import record_gym_metrics
    from nemo.lens.instruments.rl import record_rl_metrics

    provider, reader = _provider_and_reader()
    meter = provider.get_meter("app")
    # The first six positionally, as 0.1.0 allowed; v0.2.0 moved the durations back.
    record_rl_metrics(
        meter,
        0.75,
        0.02,
        -0.3,
        0.4,
        1.1,
        250.0,
        generation_duration_ms=1200.0,
        rollout_duration_ms=3400.0,
    )
    record_gym_metrics(meter, server_request_duration_ms=35.0, verify_success_rate=0.5)
    found = _metrics(reader)
    legacy_rl = {getattr(semconv, n) for n in semconv.__all__ if n.startswith("LEGACY_RL_")}
    v0_2_0 = {
        semconv.LEGACY_RL_GRAD_NORM,
        semconv.LEGACY_RL_LEARNING_RATE,
        semconv.LEGACY_RL_THROUGHPUT_TOKENS_PER_SEC,
    }
    assert legacy_rl - v0_2_0 <= set(found)
    assert found[semconv.LEGACY_RL_POLICY_LOSS].data.data_points[0].value == -0.3  # type: ignore[union-attr]
    assert {
        semconv.LEGACY_GYM_SERVER_REQUEST_DURATION_MS,
        semconv.LEGACY_GYM_VERIFY_SUCCESS_RATE,
    } == {name for name in found if name.startswith("gym.")}
    provider.shutdown()


def test_the_0_1_0_helpers_skip_none_and_never_raise() -> None:
    from nemo.lens.instruments.gym import record_gym_metrics
    from nemo.lens.instruments.rl import record_rl_metrics

    provider, reader = _provider_and_reader()
    meter = provider.get_meter("app")
    record_rl_metrics(meter)  # every metric None: nothing recorded
    assert _metrics(reader) == {}
    record_rl_metrics(meter, reward_mean="high")  # type: ignore[arg-type]
    record_gym_metrics(object(), active_servers=3)  # type: ignore[arg-type]
    record_gym_metrics(meter, rollout_duration_ms=float("nan"))
    assert _metrics(reader) == {}
    provider.shutdown()


# -- resources ---------------------------------------------------------------------------


def test_the_detectors_return_plain_dicts(monkeypatch: pytest.MonkeyPatch) -> None:
    from nemo.lens.resources import detect_resource
    from nemo.lens.resources.kubernetes import detect_kubernetes
    from nemo.lens.resources.local import detect_local
    from nemo.lens.resources.slurm import detect_slurm

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    local = detect_local()
    assert type(local) is dict
    assert set(local) == {semconv.HOST_NAME, semconv.PROCESS_PID, semconv.HOST_GPU_COUNT}
    assert local[semconv.HOST_GPU_COUNT] == 2
    assert detect_slurm() == {}
    assert detect_kubernetes() == {}
    assert detect_resource() == local

    monkeypatch.setenv("SLURM_JOB_ID", "4242")
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    monkeypatch.setenv("HOSTNAME", "trainer-0")
    monkeypatch.setenv("POD_NAMESPACE", "research")
    assert detect_slurm()[semconv.SLURM_JOB_ID] == "4242"
    assert detect_kubernetes() == {
        semconv.K8S_POD_NAME: "trainer-0",
        semconv.K8S_NAMESPACE_NAME: "research",
    }
    merged = detect_resource()
    assert type(merged) is dict
    assert merged == {**detect_local(), **detect_slurm(), **detect_kubernetes()}


# -- logging bridge, contrib -------------------------------------------------------------


def test_the_logging_bridge_goes_on_the_named_logger_only() -> None:
    from nemo.lens.logging_bridge import LoggingBridgeHandler, setup_logging_bridge

    name = "nemo_lens_compat_named"
    named, root = logging.getLogger(name), logging.getLogger()
    assert setup_logging_bridge(name) is None  # nothing set up: nothing installed
    assert not any(isinstance(h, LoggingBridgeHandler) for h in named.handlers)

    logs: InMemoryLogRecordExporter = InMemoryLogRecordExporter()  # type: ignore[no-untyped-call]
    setup_telemetry(_config(logs_enabled=True), log_exporter=logs)
    before = list(root.handlers)
    handler = setup_logging_bridge(name, logging.WARNING)
    try:
        assert handler is not None and handler in named.handlers
        assert root.handlers == before
        named.setLevel(logging.DEBUG)
        named.info("below the level")
        named.warning("bridged")
        assert [record.log_record.body for record in logs.get_finished_logs()] == ["bridged"]
    finally:
        named.removeHandler(handler)  # type: ignore[arg-type]
        named.setLevel(logging.NOTSET)


def test_the_0_1_0_ray_and_nccl_helpers() -> None:
    from opentelemetry import context as otel_context

    from nemo.lens.contrib.nccl import deserialize_context, extract_nccl_context, serialize_context
    from nemo.lens.contrib.ray import extract_ray_context, inject_ray_context

    assert extract_ray_context() == otel_context.get_current()
    with testing.capture_spans("all"), nemo.lens.span_cm("parent") as parent:
        carrier = inject_ray_context()
        data = serialize_context()
    assert json.loads(data) == carrier  # 0.1.0's format: the carrier as JSON
    assert deserialize_context(data) == carrier
    continued = trace.get_current_span(extract_nccl_context(data)).get_span_context()
    assert continued.span_id == parent.get_span_context().span_id
    assert trace.get_current_span(extract_ray_context(carrier)).get_span_context() == continued


def test_the_logging_bridge_follows_an_sdk_provider_the_application_installed() -> None:
    # Its own interpreter: OpenTelemetry lets the global logger provider be set once.
    code = """
import logging
import subprocess
import sys
from opentelemetry._logs import set_logger_provider
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from nemo.lens.logging_bridge import setup_logging_bridge

exporter = InMemoryLogRecordExporter()
provider = LoggerProvider()
provider.add_log_record_processor(SimpleLogRecordProcessor(exporter))
set_logger_provider(provider)
handler = setup_logging_bridge("app")
assert handler is not None
logging.getLogger("app").warning("hello from the app")
logging.getLogger("other").warning("not bridged")
bodies = [item.log_record.body for item in exporter.get_finished_logs()]
assert bodies == ["hello from the app"], bodies
print("ok")
"""
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=60
    )
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
