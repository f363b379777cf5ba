"""Upstream v0.2.0's surface (COMPAT.md §4), as code written for v0.2.0 calls it."""

from __future__ import annotations

import inspect
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from nemo.lens import semconv
from nemo.lens.semconv.metrics import INSTRUMENTS
from tests.metric_data import metrics_by_name

# -- record_rl_metrics -------------------------------------------------------------------

# v0.2.0's parameters, in v0.2.0's order. NeMo-RL filters its keyword arguments by
# inspect.signature(record_rl_metrics): a name missing here is a metric that never arrives.
_V0_2_0_RL_PARAMETERS = [
    "meter",
    "reward_mean",
    "kl_divergence",
    "policy_loss",
    "value_loss",
    "entropy",
    "response_length_mean",
    "grad_norm",
    "learning_rate",
    "throughput_tokens_per_sec",
    "generation_duration_ms",
    "rollout_duration_ms",
]

_KINDS = {"gauge": "Gauge", "histogram": "Histogram", "counter": "Sum"}


def _metric_of(parameter: str) -> str:
    """The catalogue's constant for a parameter: ``grad_norm`` -> ``LEGACY_RL_GRAD_NORM``."""
    name: str = getattr(semconv, "LEGACY_RL_" + parameter.upper())
    return name


@pytest.mark.parametrize("module", ["nemo.lens.instruments.rl", "nemo.lens.instruments"])
def test_record_rl_metrics_has_v0_2_0s_signature(module: str) -> None:
    record = __import__(module, fromlist=["record_rl_metrics"]).record_rl_metrics
    parameters = inspect.signature(record).parameters
    assert list(parameters) == _V0_2_0_RL_PARAMETERS
    assert parameters["meter"].default is inspect.Parameter.empty
    assert all(parameters[name].default is None for name in _V0_2_0_RL_PARAMETERS[1:])


def test_every_rl_argument_arrives_as_the_catalogue_says() -> None:
    from nemo.lens.instruments import record_rl_metrics

    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    values: dict[str, Any] = {
        name: float(index) + 0.5 for index, name in enumerate(_V0_2_0_RL_PARAMETERS[1:])
    }
    # What NeMo-RL does: keep only the keywords the signature names.
    accepted = set(inspect.signature(record_rl_metrics).parameters)
    record_rl_metrics(
        provider.get_meter("rl"), **{k: v for k, v in values.items() if k in accepted}
    )
    found = metrics_by_name(reader)
    assert set(found) == {_metric_of(name) for name in values}
    for parameter, value in values.items():
        metric = found[_metric_of(parameter)]
        info = INSTRUMENTS[metric.name]
        assert (metric.unit, metric.description) == (info.unit, info.description)
        assert type(metric.data).__name__ == _KINDS[info.kind]
        (point,) = metric.data.data_points
        recorded = point.sum if info.kind == "histogram" else point.value  # type: ignore[union-attr]
        assert recorded == value, parameter
    provider.shutdown()


def test_v0_2_0s_three_gauges_have_its_names_and_units() -> None:
    # The data contract (COMPAT.md §4), spelled out: dashboards query these strings.
    expected = {
        semconv.LEGACY_RL_GRAD_NORM: ("rl.grad_norm", "gauge", ""),
        semconv.LEGACY_RL_LEARNING_RATE: ("rl.learning_rate", "gauge", ""),
        semconv.LEGACY_RL_THROUGHPUT_TOKENS_PER_SEC: (
            "rl.throughput.tokens_per_sec",
            "gauge",
            "{token}/s",
        ),
    }
    for constant, (name, kind, unit) in expected.items():
        info = INSTRUMENTS[constant]
        assert (constant, info.kind, info.unit) == (name, kind, unit)


def test_rl_arguments_may_be_none_or_bad_and_never_raise() -> None:
    from nemo.lens.instruments.rl import record_rl_metrics

    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    meter = provider.get_meter("rl")
    record_rl_metrics(meter, grad_norm=None, learning_rate=None, throughput_tokens_per_sec=None)
    record_rl_metrics(meter, grad_norm="big", learning_rate=float("nan"))  # type: ignore[arg-type]
    record_rl_metrics(object(), throughput_tokens_per_sec=5.0)  # type: ignore[arg-type]
    assert metrics_by_name(reader) == {}
    record_rl_metrics(meter, learning_rate=3e-4)
    assert set(metrics_by_name(reader)) == {semconv.LEGACY_RL_LEARNING_RATE}
    provider.shutdown()


# -- SeedIndependentIdGenerator ----------------------------------------------------------

# Each of the parent and three forked children seeds random with 0, then draws ids from
# the generator under test and from the SDK's default one (the control: it repeats).
_FORKED_IDS = """
import json, os, random, sys
from opentelemetry.sdk.trace.id_generator import RandomIdGenerator
from nemo.lens.providers import SeedIndependentIdGenerator

ours, sdk = SeedIndependentIdGenerator(), RandomIdGenerator()

def draw():
    random.seed(0)
    ids = [ours.generate_span_id() for _ in range(5)]
    ids += [ours.generate_trace_id() for _ in range(5)]
    random.seed(0)
    return {"ours": ids, "sdk": [sdk.generate_span_id() for _ in range(5)]}

pipes = []
for _ in range(3):
    read, write = os.pipe()
    if os.fork() == 0:
        os.close(read)
        os.write(write, json.dumps(draw()).encode())
        os._exit(0)
    os.close(write)
    pipes.append(read)
results = [draw()]
for read in pipes:
    with os.fdopen(read) as pipe:
        results.append(json.loads(pipe.read()))
    os.wait()
print(json.dumps(results))
"""


def test_seed_independent_ids_differ_under_random_seed_and_across_forks() -> None:
    import json
    import subprocess
    import sys

    completed = subprocess.run(
        [sys.executable, "-c", _FORKED_IDS], capture_output=True, text=True, timeout=60
    )
    assert completed.returncode == 0, completed.stderr
    results = json.loads(completed.stdout.strip().splitlines()[-1])
    assert len(results) == 4
    # Control: the SDK's generator gives every process the same ids after random.seed(0).
    assert all(result["sdk"] == results[0]["sdk"] for result in results)
    ours = [value for result in results for value in result["ours"]]
    assert len(ours) == 40
    assert len(set(ours)) == 40
    assert all(value > 0 for value in ours)


def test_the_id_generator_is_an_sdk_one_with_random_trace_ids() -> None:
    import random

    from opentelemetry.sdk.trace.id_generator import IdGenerator

    from nemo.lens.providers import SeedIndependentIdGenerator

    generator = SeedIndependentIdGenerator()
    assert isinstance(generator, IdGenerator)
    assert generator.is_trace_id_random() is True
    assert repr(generator).startswith("<nemo.lens.providers.SeedIndependentIdGenerator")
    random.seed(7)
    first = (generator.generate_span_id(), generator.generate_trace_id())
    random.seed(7)
    second = (generator.generate_span_id(), generator.generate_trace_id())
    assert first != second
    assert 0 < first[0] < 2**64
    assert 0 < first[1] < 2**128


def test_set_up_gives_the_tracer_provider_the_public_generator() -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from nemo.lens import NemoLensConfig, setup_telemetry
    from nemo.lens._sdk.processors import LensIdGenerator
    from nemo.lens.providers import SeedIndependentIdGenerator

    assert LensIdGenerator is SeedIndependentIdGenerator  # the earlier name still imports
    config = NemoLensConfig(enabled=True, exporter="none", metrics_enabled=False)
    handle = setup_telemetry(config, span_exporter=InMemorySpanExporter())
    try:
        provider = handle.tracer_provider
        assert isinstance(provider, TracerProvider)
        assert isinstance(provider.id_generator, SeedIndependentIdGenerator)
    finally:
        handle.shutdown()
