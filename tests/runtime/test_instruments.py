"""Metric helpers and the metrics pipeline: what arrives at a reader, under which names."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import metrics
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import (
    HistogramDataPoint,
    InMemoryMetricReader,
    Metric,
    NumberDataPoint,
)

from nemo.lens.config import NemoLensConfig
from nemo.lens.handle import TelemetryHandle, setup_telemetry
from nemo.lens.instruments import (
    _recording,
    record_gym_rollout_metrics,
    record_inference_metrics,
    record_rl_step_metrics,
)
from tests.metric_data import metrics_by_name


@pytest.fixture(autouse=True)
def _isolated(clean_env: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    # Each test sees the first problem with a metric as the first one.
    monkeypatch.setattr(_recording, "_reported", set())
    yield


def _set_up(reader: InMemoryMetricReader, **fields: Any) -> TelemetryHandle:
    fields.setdefault("enabled", True)
    fields.setdefault("exporter", "none")
    fields.setdefault("traces_enabled", False)
    return setup_telemetry(NemoLensConfig(**fields), metric_reader=reader)


def _metrics(reader: InMemoryMetricReader) -> dict[str, Metric]:
    data = reader.get_metrics_data()
    found: dict[str, Metric] = {}
    if data is None:
        return found
    for resource_metrics in data.resource_metrics:
        for scope_metrics in resource_metrics.scope_metrics:
            for metric in scope_metrics.metrics:
                assert metric.name not in found, f"{metric.name} arrived twice"
                found[metric.name] = metric
    return found


def _points(metric: Metric) -> dict[frozenset[tuple[str, Any]], Any]:
    """Data points of *metric* keyed by their attribute set."""
    return {frozenset((p.attributes or {}).items()): p for p in metric.data.data_points}


def _only_point(metric: Metric) -> Any:
    (point,) = metric.data.data_points
    return point


def _histogram(metric: Metric, **attributes: Any) -> HistogramDataPoint:
    point = _points(metric)[frozenset(attributes.items())]
    assert isinstance(point, HistogramDataPoint)
    return point


# -- GenAI inference ------------------------------------------------------------------


def test_inference_metrics_arrive_under_the_genai_names() -> None:
    reader = InMemoryMetricReader()
    _set_up(reader)

    record_inference_metrics(
        operation="chat",
        model="llama-3-8b",
        response_model="llama-3-8b-instruct",
        provider="vllm",
        input_tokens=12,
        output_tokens=40,
        operation_duration_s=0.8,
        request_duration_s=0.7,
        time_to_first_token_s=0.05,
        time_per_output_token_s=0.015,
    )

    found = _metrics(reader)
    assert {name: metric.unit for name, metric in found.items()} == {
        "gen_ai.client.token.usage": "{token}",
        "gen_ai.client.operation.duration": "s",
        "gen_ai.server.request.duration": "s",
        "gen_ai.server.time_to_first_token": "s",
        "gen_ai.server.time_per_output_token": "s",
    }
    base = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "vllm",
        "gen_ai.request.model": "llama-3-8b",
        "gen_ai.response.model": "llama-3-8b-instruct",
    }
    tokens = found["gen_ai.client.token.usage"]
    assert _histogram(tokens, **base, **{"gen_ai.token.type": "input"}).sum == 12
    assert _histogram(tokens, **base, **{"gen_ai.token.type": "output"}).sum == 40
    for name, value in (
        ("gen_ai.client.operation.duration", 0.8),
        ("gen_ai.server.request.duration", 0.7),
        ("gen_ai.server.time_to_first_token", 0.05),
        ("gen_ai.server.time_per_output_token", 0.015),
    ):
        point = _histogram(found[name], **base)
        assert point.count == 1, name
        assert point.sum == pytest.approx(value), name


def test_inference_histograms_use_the_genai_bucket_boundaries() -> None:
    reader = InMemoryMetricReader()
    _set_up(reader)

    record_inference_metrics(
        operation="text_completion",
        input_tokens=3,
        operation_duration_s=1.0,
        time_to_first_token_s=0.003,
        time_per_output_token_s=0.02,
    )

    found = _metrics(reader)
    bounds = {name: tuple(_only_point(metric).explicit_bounds) for name, metric in found.items()}
    assert bounds["gen_ai.client.token.usage"][:4] == (1, 4, 16, 64)
    assert bounds["gen_ai.client.token.usage"][-1] == 67108864
    assert bounds["gen_ai.client.operation.duration"][:3] == (0.01, 0.02, 0.04)
    assert bounds["gen_ai.client.operation.duration"][-1] == 81.92
    assert bounds["gen_ai.server.time_to_first_token"][:3] == (0.001, 0.005, 0.01)
    assert bounds["gen_ai.server.time_to_first_token"][-1] == 10.0
    assert bounds["gen_ai.server.time_per_output_token"][:3] == (0.01, 0.025, 0.05)
    # 3 ms lands in the second time-to-first-token bucket, not in the SDK's first (0..5 ms
    # would swallow everything under 5 ms with the default boundaries).
    assert _only_point(found["gen_ai.server.time_to_first_token"]).bucket_counts[1] == 1


def test_none_values_record_nothing() -> None:
    reader = InMemoryMetricReader()
    _set_up(reader)

    record_inference_metrics(operation="chat", output_tokens=7)

    found = _metrics(reader)
    assert list(found) == ["gen_ai.client.token.usage"]
    point = _only_point(found["gen_ai.client.token.usage"])
    assert dict(point.attributes) == {
        "gen_ai.operation.name": "chat",
        "gen_ai.token.type": "output",
    }


def test_error_type_goes_on_the_durations_not_on_token_usage() -> None:
    reader = InMemoryMetricReader()
    _set_up(reader)

    record_inference_metrics(
        operation="chat", input_tokens=5, operation_duration_s=2.0, error_type="timeout"
    )

    found = _metrics(reader)
    assert "error.type" not in _only_point(found["gen_ai.client.token.usage"]).attributes
    duration = _only_point(found["gen_ai.client.operation.duration"])
    assert duration.attributes["error.type"] == "timeout"


def test_caller_attributes_are_added_and_the_keywords_win(caplog: pytest.LogCaptureFixture) -> None:
    reader = InMemoryMetricReader()
    _set_up(reader)

    with caplog.at_level(logging.WARNING, logger="nemo.lens.instruments"):
        record_inference_metrics(
            operation="chat",
            model="real-model",
            output_tokens=1,
            attributes={
                "deployment.tier": "canary",
                "gen_ai.request.model": "overridden",
                "batch": [1, 2],  # not a scalar: dropped
                "skipped": None,
            },
        )

    point = _only_point(_metrics(reader)["gen_ai.client.token.usage"])
    assert dict(point.attributes) == {
        "deployment.tier": "canary",
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "real-model",
        "gen_ai.token.type": "output",
    }
    assert "dropping metric attribute 'batch'" in caplog.text


# -- RL steps -------------------------------------------------------------------------


def test_rl_step_metrics() -> None:
    reader = InMemoryMetricReader()
    _set_up(reader)

    for step, reward in ((1, -0.25), (2, 0.5)):
        record_rl_step_metrics(
            step=step,
            reward_mean=reward,
            reward_std=0.1,
            reward_min=-1.0,
            reward_max=1.0,
            step_duration_s=30.0,
            rollout_duration_s=20.0,
            generation_duration_s=16.0,
            policy_update_duration_s=9.0,
            generated_tokens=4000,
            attributes={"algorithm": "grpo"},
        )

    found = _metrics(reader)
    assert {name: metric.unit for name, metric in found.items()} == {
        "nemo.rl.step": "{step}",
        "nemo.rl.reward.mean": "1",
        "nemo.rl.reward.std": "1",
        "nemo.rl.reward.min": "1",
        "nemo.rl.reward.max": "1",
        "nemo.rl.step.duration": "s",
        "nemo.rl.rollout.duration": "s",
        "nemo.rl.generation.duration": "s",
        "nemo.rl.policy_update.duration": "s",
        "nemo.rl.generation.tokens": "{token}",
        "nemo.rl.generation.throughput": "{token}/s",
    }
    for metric in found.values():
        assert dict(_only_point(metric).attributes) == {"algorithm": "grpo"}, metric.name

    def value(name: str) -> Any:
        point = _only_point(found[name])
        assert isinstance(point, NumberDataPoint), name
        return point.value

    assert value("nemo.rl.step") == 2  # a gauge keeps the last value
    assert value("nemo.rl.reward.mean") == 0.5  # negative rewards are fine too
    assert value("nemo.rl.reward.min") == -1.0
    assert value("nemo.rl.generation.tokens") == 8000  # a counter adds up
    assert value("nemo.rl.generation.throughput") == 250.0  # 4000 tokens / 16 s
    step_duration = _only_point(found["nemo.rl.step.duration"])
    assert (step_duration.count, step_duration.sum) == (2, 60.0)


def test_rl_explicit_throughput_wins_and_none_is_not_derived_from_nothing() -> None:
    reader = InMemoryMetricReader()
    _set_up(reader)

    record_rl_step_metrics(generated_tokens=100, generation_duration_s=4.0, tokens_per_second=99.0)
    record_rl_step_metrics(generated_tokens=100)  # no duration: no throughput
    record_rl_step_metrics(generated_tokens=100, generation_duration_s=0.0)  # no division by 0

    throughput = _only_point(_metrics(reader)["nemo.rl.generation.throughput"])
    assert throughput.value == 99.0


# -- Gym rollouts ---------------------------------------------------------------------


def test_gym_rollout_metrics_count_outcomes() -> None:
    reader = InMemoryMetricReader()
    _set_up(reader)

    for passed, tools in ((True, 3), (True, 1), (False, 0)):
        record_gym_rollout_metrics(
            environment="math",
            agent="react",
            passed=passed,
            duration_s=12.0,
            verify_duration_s=0.5,
            tool_calls=tools,
            sandbox_calls=2,
        )
    record_gym_rollout_metrics(environment="math", error_type="sandbox_timeout")

    found = _metrics(reader)
    assert {name: metric.unit for name, metric in found.items()} == {
        "nemo.gym.rollouts": "{rollout}",
        "nemo.gym.rollout.duration": "s",
        "nemo.gym.verify.duration": "s",
        "nemo.gym.rollout.tool_calls": "{call}",
        "nemo.gym.rollout.sandbox_calls": "{call}",
    }
    env = {"nemo.gym.environment": "math", "nemo.gym.agent": "react"}
    rollouts = _points(found["nemo.gym.rollouts"])
    assert {key: point.value for key, point in rollouts.items()} == {
        frozenset({**env, "nemo.gym.verify.passed": True}.items()): 2,
        frozenset({**env, "nemo.gym.verify.passed": False}.items()): 1,
        frozenset({"nemo.gym.environment": "math", "error.type": "sandbox_timeout"}.items()): 1,
    }
    passed_tools = _histogram(
        found["nemo.gym.rollout.tool_calls"], **env, **{"nemo.gym.verify.passed": True}
    )
    assert (passed_tools.count, passed_tools.sum) == (2, 4)
    # Zero calls is a bucket of its own.
    failed_tools = _histogram(
        found["nemo.gym.rollout.tool_calls"], **env, **{"nemo.gym.verify.passed": False}
    )
    assert failed_tools.explicit_bounds[0] == 0
    assert failed_tools.bucket_counts[0] == 1


# -- meters and caching ---------------------------------------------------------------


class _SpyMeter(metrics.Meter):
    """Forwards to a real meter and counts the instruments created through it."""

    def __init__(self, real: metrics.Meter, fail: Sequence[str] = ()) -> None:
        super().__init__("spy")
        self.real = real
        self.fail = set(fail)
        self.created: list[str] = []

    def _check(self, kind: str, name: str) -> None:
        self.created.append(name)
        if kind in self.fail:
            raise RuntimeError(f"no {kind} today")

    def create_counter(self, name: str, unit: str = "", description: str = "") -> Any:
        self._check("counter", name)
        return self.real.create_counter(name, unit, description)

    def create_up_down_counter(self, name: str, unit: str = "", description: str = "") -> Any:
        raise NotImplementedError

    def create_histogram(self, name: str, unit: str = "", description: str = "", **kw: Any) -> Any:
        self._check("histogram", name)
        return self.real.create_histogram(name, unit, description, **kw)

    def create_gauge(self, name: str, unit: str = "", description: str = "") -> Any:
        self._check("gauge", name)
        return self.real.create_gauge(name, unit, description)

    def create_observable_counter(self, name: str, *args: Any, **kw: Any) -> Any:
        raise NotImplementedError

    def create_observable_gauge(self, name: str, *args: Any, **kw: Any) -> Any:
        raise NotImplementedError

    def create_observable_up_down_counter(self, name: str, *args: Any, **kw: Any) -> Any:
        raise NotImplementedError


def test_a_meter_passed_in_is_used_and_its_instruments_are_created_once() -> None:
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    spy = _SpyMeter(provider.get_meter("app"))

    for _ in range(50):
        record_inference_metrics(
            operation="chat", input_tokens=2, operation_duration_s=0.1, meter=spy
        )

    assert sorted(spy.created) == ["gen_ai.client.operation.duration", "gen_ai.client.token.usage"]
    tokens = _only_point(_metrics(reader)["gen_ai.client.token.usage"])
    assert (tokens.count, tokens.sum) == (50, 100)
    provider.shutdown()


def test_each_meter_gets_its_own_instruments() -> None:
    first, second = InMemoryMetricReader(), InMemoryMetricReader()
    first_provider = MeterProvider(metric_readers=[first])
    second_provider = MeterProvider(metric_readers=[second])

    record_rl_step_metrics(generated_tokens=5, meter=first_provider.get_meter("a"))
    record_rl_step_metrics(generated_tokens=7, meter=second_provider.get_meter("b"))

    assert _only_point(_metrics(first)["nemo.rl.generation.tokens"]).value == 5
    assert _only_point(_metrics(second)["nemo.rl.generation.tokens"]).value == 7
    first_provider.shutdown()
    second_provider.shutdown()


def test_the_default_meter_follows_reinitialisation() -> None:
    first, second = InMemoryMetricReader(), InMemoryMetricReader()
    _set_up(first)
    record_rl_step_metrics(generated_tokens=3)
    assert _only_point(_metrics(first)["nemo.rl.generation.tokens"]).value == 3

    setup_telemetry(
        NemoLensConfig(enabled=True, exporter="none", traces_enabled=False),
        metric_reader=second,
        _allow_reinit=True,
    )
    record_rl_step_metrics(generated_tokens=4)

    assert _only_point(_metrics(second)["nemo.rl.generation.tokens"]).value == 4


def test_recording_before_set_up_is_harmless_and_set_up_then_takes_over() -> None:
    record_gym_rollout_metrics(environment="early")  # no provider anywhere yet

    reader = InMemoryMetricReader()
    _set_up(reader)
    record_gym_rollout_metrics(environment="late")

    rollouts = _metrics(reader)["nemo.gym.rollouts"]
    assert [dict(point.attributes or {}) for point in rollouts.data.data_points] == [
        {"nemo.gym.environment": "late"}
    ]


def test_after_shutdown_records_go_nowhere_not_into_the_next_set_up() -> None:
    _set_up(InMemoryMetricReader()).shutdown()
    record_rl_step_metrics(generated_tokens=10)  # dropped, and must not raise

    reader = InMemoryMetricReader()
    _set_up(reader)
    record_rl_step_metrics(generated_tokens=1)

    assert _only_point(_metrics(reader)["nemo.rl.generation.tokens"]).value == 1


# -- never breaking the job -----------------------------------------------------------


class _FakeTensor:
    """Like a one-element tensor: not a number, but has ``.item()``."""

    def __init__(self, value: float) -> None:
        self.value = value

    def item(self) -> float:
        return self.value


def test_scalar_likes_are_accepted_and_bad_values_skipped_with_one_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    reader = InMemoryMetricReader()
    _set_up(reader)

    with caplog.at_level(logging.DEBUG, logger="nemo.lens.instruments"):
        # One-element tensors work at run time, though the signature says float.
        record_rl_step_metrics(step_duration_s=_FakeTensor(2.5))  # type: ignore[arg-type]
        for bad in (-1.0, float("nan"), float("inf"), "fast", True, _FakeTensor(float("nan"))):
            record_rl_step_metrics(step_duration_s=bad)  # type: ignore[arg-type]

    point = _only_point(_metrics(reader)["nemo.rl.step.duration"])
    assert (point.count, point.sum) == (1, 2.5)
    about = [r for r in caplog.records if "nemo.rl.step.duration" in r.getMessage()]
    assert [r.levelno for r in about] == [logging.WARNING] + [logging.DEBUG] * 5
    assert "skipping -1.0 for metric nemo.rl.step.duration (needs a finite, non-negative" in (
        about[0].getMessage()
    )


def test_an_instrument_that_cannot_be_created_is_skipped_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    spy = _SpyMeter(provider.get_meter("app"), fail=["histogram"])

    with caplog.at_level(logging.WARNING, logger="nemo.lens.instruments"):
        for _ in range(3):
            record_gym_rollout_metrics(duration_s=1.0, meter=spy)

    # The counter still works; the histogram was tried once, not on every call.
    assert _only_point(_metrics(reader)["nemo.gym.rollouts"]).value == 3
    assert spy.created.count("nemo.gym.rollout.duration") == 1
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "could not create metric nemo.gym.rollout.duration" in warnings[0].getMessage()
    provider.shutdown()


def test_an_instrument_that_fails_to_record_never_raises(caplog: pytest.LogCaptureFixture) -> None:
    class _Broken:
        def add(self, *args: Any, **kwargs: Any) -> None:
            raise ValueError("exporter on fire")

    class _BrokenMeter(_SpyMeter):
        def create_counter(self, name: str, unit: str = "", description: str = "") -> Any:
            return _Broken()

    meter = _BrokenMeter(metrics.NoOpMeter("x"))
    with caplog.at_level(logging.WARNING, logger="nemo.lens.instruments"):
        record_gym_rollout_metrics(meter=meter)
        record_gym_rollout_metrics(meter=meter)

    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert [w.getMessage() for w in warnings] == [
        "nemo.lens: recording metric nemo.gym.rollouts failed; later occurrences are logged "
        "at debug level"
    ]


# -- the metrics pipeline (providers) -------------------------------------------------


def _wait_for_lines(path: Path, timeout_s: float = 20.0) -> list[str]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if path.exists():
            lines = path.read_text(encoding="utf-8").splitlines()
            if lines:
                return lines
        time.sleep(0.02)
    return []


def test_metrics_are_exported_every_otel_metric_export_interval(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The SDK's default interval is 60 s: a line within the wait below can only
    # come from the periodic reader honouring the variable, not from shutdown.
    monkeypatch.setenv("OTEL_METRIC_EXPORT_INTERVAL", "50")
    handle = setup_telemetry(
        NemoLensConfig(
            enabled=True,
            exporter="file",
            traces_enabled=False,
            trace_file=str(tmp_path / "job.jsonl"),
        )
    )
    try:
        record_rl_step_metrics(generated_tokens=11)
        lines = _wait_for_lines(tmp_path / "job.metrics.jsonl")
        assert lines, "no periodic metrics export arrived"
        assert "nemo.rl.generation.tokens" in lines[-1]
    finally:
        handle.shutdown()


@pytest.mark.parametrize("raw", ["0", "-5", "soon"])
def test_a_bad_export_interval_warns_and_does_not_fail_set_up(
    raw: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("OTEL_METRIC_EXPORT_INTERVAL", raw)
    with caplog.at_level(logging.WARNING, logger="nemo.lens.providers"):
        handle = setup_telemetry(
            NemoLensConfig(enabled=True, exporter="console", traces_enabled=False)
        )
    assert f"ignoring OTEL_METRIC_EXPORT_INTERVAL={raw!r}" in caplog.text

    record_inference_metrics(operation="chat", input_tokens=9)
    handle.shutdown()  # shutdown exports what the interval has not yet

    exported = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    names = {
        metric["name"]
        for line in exported
        for resource in line.get("resource_metrics", [])
        for scope in resource["scope_metrics"]
        for metric in scope["metrics"]
    }
    assert "gen_ai.client.token.usage" in names


def test_importing_and_recording_before_set_up_stays_off_the_sdk() -> None:
    code = textwrap.dedent(
        """
        import json, sys
        from nemo.lens.instruments import record_inference_metrics
        record_inference_metrics(operation="chat", input_tokens=1, operation_duration_s=0.1)
        print(json.dumps({
            "api": "opentelemetry.metrics" in sys.modules,
            "sdk": sorted(m for m in sys.modules if m.startswith("opentelemetry.sdk")),
        }))
        """
    )
    completed = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert completed.returncode == 0, completed.stderr
    result = json.loads(completed.stdout.strip().splitlines()[-1])
    assert result == {"api": True, "sdk": []}


def test_every_instrument_is_created_as_the_schema_catalogue_says() -> None:
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    from nemo.lens.semconv.metrics import INSTRUMENTS

    reader = InMemoryMetricReader()
    meter = MeterProvider(metric_readers=[reader]).get_meter("catalogue")
    for name in INSTRUMENTS:
        _recording.create(meter, name)(1.0, {})
    exported = metrics_by_name(reader)
    assert set(exported) == set(INSTRUMENTS)
    for name, info in INSTRUMENTS.items():
        assert (exported[name].unit, exported[name].description) == (info.unit, info.description)
        kind = type(exported[name].data).__name__
        assert kind == {"counter": "Sum", "histogram": "Histogram", "gauge": "Gauge"}[info.kind]
        if info.boundaries is not None:
            (point,) = exported[name].data.data_points
            assert tuple(getattr(point, "explicit_bounds", ())) == info.boundaries
