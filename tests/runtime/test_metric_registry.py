"""The metric registry: groups a consumer declares, recorded by key on cached instruments."""

from __future__ import annotations

import inspect
import logging
from collections.abc import Iterable, Iterator
from typing import Any

import pytest
from opentelemetry.metrics import CallbackOptions, Observation
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader, Metric

from nemo.lens import instruments
from nemo.lens.instruments import (
    MetricSpec,
    _recording,
    create_metric_instruments,
    record_metrics,
    register_metric_group,
    registered_metric_groups,
    unregister_metric_group,
)
from nemo.lens.instruments import registry as registry_module
from tests.metric_data import metrics_by_name

_RL = (
    MetricSpec("reward_mean", "test.rl.reward.mean", "gauge"),
    MetricSpec("tokens", "test.rl.tokens", "counter", "{token}", "Tokens generated."),
    MetricSpec("generation_ms", "test.rl.generation.duration_ms", "histogram", unit="ms"),
    MetricSpec("in_flight", "test.rl.in_flight", "up_down_counter"),
)


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(registry_module, "_groups", {})
    monkeypatch.setattr(_recording, "_reported", set())
    yield


@pytest.fixture
def reader() -> Iterator[InMemoryMetricReader]:
    found = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[found])
    _providers[found] = provider
    yield found
    del _providers[found]
    provider.shutdown()


_providers: dict[InMemoryMetricReader, MeterProvider] = {}


def _meter(reader: InMemoryMetricReader) -> Any:
    return _providers[reader].get_meter("registry-test")


def _value(metric: Metric) -> Any:
    (point,) = metric.data.data_points
    return point.value if hasattr(point, "value") else point.sum


def test_each_kind_records_under_its_name_unit_and_description(
    reader: InMemoryMetricReader,
) -> None:
    register_metric_group("test.rl", _RL)
    meter = _meter(reader)

    record_metrics(meter, "test.rl", {"reward_mean": 0.5, "tokens": 10}, generation_ms=12.5)
    record_metrics(meter, "test.rl", tokens=5, in_flight=-1, reward_mean=0.75)

    found = metrics_by_name(reader)
    assert _value(found["test.rl.reward.mean"]) == 0.75
    assert _value(found["test.rl.tokens"]) == 15
    assert found["test.rl.tokens"].unit == "{token}"
    assert found["test.rl.tokens"].description == "Tokens generated."
    assert _value(found["test.rl.generation.duration_ms"]) == 12.5
    assert found["test.rl.generation.duration_ms"].unit == "ms"
    assert _value(found["test.rl.in_flight"]) == -1


def test_keywords_win_over_the_mapping_and_none_records_nothing(
    reader: InMemoryMetricReader,
) -> None:
    register_metric_group("test.rl", _RL)
    meter = _meter(reader)

    record_metrics(meter, "test.rl", {"reward_mean": 1.0, "tokens": None}, reward_mean=2.0)

    found = metrics_by_name(reader)
    assert _value(found["test.rl.reward.mean"]) == 2.0
    assert "test.rl.tokens" not in found


def test_attributes_go_on_every_point(reader: InMemoryMetricReader) -> None:
    register_metric_group("test.rl", _RL)

    record_metrics(_meter(reader), "test.rl", attributes={"phase": "train"}, reward_mean=1.0)

    (point,) = metrics_by_name(reader)["test.rl.reward.mean"].data.data_points
    assert dict(point.attributes or {}) == {"phase": "train"}


def test_series_may_be_called_meter_group_or_values(reader: InMemoryMetricReader) -> None:
    register_metric_group(
        "test.odd",
        [MetricSpec("meter", "test.odd.meter"), MetricSpec("values", "test.odd.values")],
    )

    record_metrics(_meter(reader), "test.odd", meter=1.0, values=2.0)

    found = metrics_by_name(reader)
    assert (_value(found["test.odd.meter"]), _value(found["test.odd.values"])) == (1.0, 2.0)


def test_instruments_are_created_once_per_meter(reader: InMemoryMetricReader) -> None:
    register_metric_group("test.rl", _RL)
    meter = _meter(reader)
    created: list[str] = []
    original = _recording.create

    def counting(*args: Any) -> Any:
        created.append(args[1].name)
        return original(*args)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_recording, "create", counting)
        for _ in range(3):
            record_metrics(meter, "test.rl", reward_mean=1.0, tokens=1)
    assert sorted(created) == ["test.rl.reward.mean", "test.rl.tokens"]


def test_unknown_group_key_and_bad_values_are_logged_once_and_never_raise(
    reader: InMemoryMetricReader, caplog: pytest.LogCaptureFixture
) -> None:
    register_metric_group("test.rl", _RL)
    meter = _meter(reader)
    caplog.set_level(logging.WARNING, logger="nemo.lens.instruments")

    for _ in range(2):
        record_metrics(meter, "no.such.group", reward_mean=1.0)
        record_metrics(meter, "test.rl", typo_key=1.0, reward_mean=3.0)
        record_metrics(meter, "test.rl", tokens=-4, generation_ms="slow")
        record_metrics(meter, "test.rl", 5)  # type: ignore[arg-type]

    warnings = [record.getMessage() for record in caplog.records]
    assert len(warnings) == 5, warnings
    assert any("unregistered metric group 'no.such.group'" in w for w in warnings)
    assert any("unknown metric key 'typo_key'" in w and "reward_mean" in w for w in warnings)
    assert any("skipping -4 for metric test.rl.tokens" in w for w in warnings)
    assert any("'slow'" in w for w in warnings)
    assert any("values of type int" in w for w in warnings)
    found = metrics_by_name(reader)
    assert _value(found["test.rl.reward.mean"]) == 3.0
    assert "test.rl.tokens" not in found


def test_no_meter_records_on_nemo_lens_meter(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[object] = []
    monkeypatch.setattr(_recording, "resolve_meter", lambda meter: seen.append(meter))
    register_metric_group("test.rl", _RL)

    record_metrics(None, "test.rl", reward_mean=1.0)

    assert seen == [None]


def test_registration_rejects_bad_groups_with_the_fix() -> None:
    register_metric_group("test.rl", _RL)
    with pytest.raises(ValueError, match="already registered; pass allow_override=True"):
        register_metric_group("test.rl", _RL)
    with pytest.raises(ValueError, match="Duplicate metric key 'a'"):
        register_metric_group("test.dup", [MetricSpec("a", "x.a"), MetricSpec("a", "x.b")])
    with pytest.raises(ValueError, match="at least one MetricSpec"):
        register_metric_group("test.empty", [])
    with pytest.raises(ValueError, match="non-empty string"):
        register_metric_group("", _RL)
    with pytest.raises(TypeError, match="is not a MetricSpec"):
        register_metric_group("test.bad", [("a", "x.a")])  # type: ignore[list-item]
    assert list(registered_metric_groups()) == ["test.rl"]


def test_metric_spec_checks_its_fields() -> None:
    with pytest.raises(ValueError, match=r"MetricSpec\.kind 'summary' is not one of"):
        MetricSpec("a", "x.a", "summary")
    with pytest.raises(ValueError, match=r"MetricSpec\.key must be a non-empty string"):
        MetricSpec("", "x.a")
    with pytest.raises(ValueError, match=r"MetricSpec\.name must be a non-empty string"):
        MetricSpec("a", "")
    with pytest.raises(ValueError, match="needs a callback"):
        MetricSpec("a", "x.a", "observable_gauge")
    with pytest.raises(ValueError, match="only for the kinds"):
        MetricSpec("a", "x.a", "gauge", callback=lambda options: [])
    assert MetricSpec("a", "x.a").kind == "gauge"


def test_override_replaces_the_group_and_its_changed_instruments(
    reader: InMemoryMetricReader,
) -> None:
    meter = _meter(reader)
    register_metric_group("test.swap", [MetricSpec("n", "test.swap.n", "gauge")])
    record_metrics(meter, "test.swap", n=5)

    register_metric_group(
        "test.swap", [MetricSpec("m", "test.swap.m", "counter")], allow_override=True
    )
    record_metrics(meter, "test.swap", m=2, n=9)

    found = metrics_by_name(reader)
    assert _value(found["test.swap.m"]) == 2
    assert _value(found["test.swap.n"]) == 5  # n is no longer a key of the group
    assert [spec.key for spec in registered_metric_groups()["test.swap"]] == ["m"]


def test_unregister(reader: InMemoryMetricReader) -> None:
    register_metric_group("test.rl", _RL)
    unregister_metric_group("test.rl")
    assert registered_metric_groups() == {}
    with pytest.raises(ValueError, match=r"'test\.rl' is not registered"):
        unregister_metric_group("test.rl")


def test_an_observable_series_reports_through_its_callback(
    reader: InMemoryMetricReader, caplog: pytest.LogCaptureFixture
) -> None:
    def hosts(options: CallbackOptions) -> Iterable[Observation]:
        return [Observation(7, {"host.name": "a"})]

    register_metric_group(
        "test.hosts", [MetricSpec("used", "test.host.used", "observable_gauge", callback=hosts)]
    )
    meter = _meter(reader)
    create_metric_instruments(meter, "test.hosts")
    create_metric_instruments(meter, "test.hosts")
    record_metrics(meter, "test.hosts", used=99)

    (point,) = metrics_by_name(reader)["test.host.used"].data.data_points
    assert (_value(metrics_by_name(reader)["test.host.used"]), dict(point.attributes or {})) == (
        7,
        {"host.name": "a"},
    )
    assert any("reports through its callback" in r.getMessage() for r in caplog.records)


def test_the_package_and_upstream_module_path_export_the_registry() -> None:
    for name in ("MetricSpec", "register_metric_group", "record_metrics"):
        assert getattr(instruments, name) is getattr(registry_module, name)


# Upstream's signatures, as its consumers call them: (name, kind, default).
_SIGNATURES: dict[str, list[tuple[str, str, object]]] = {
    "register_metric_group": [
        ("group", "POSITIONAL_OR_KEYWORD", inspect.Parameter.empty),
        ("specs", "POSITIONAL_OR_KEYWORD", inspect.Parameter.empty),
        ("allow_override", "KEYWORD_ONLY", False),
    ],
    "record_metrics": [
        ("meter", "POSITIONAL_ONLY", inspect.Parameter.empty),
        ("group", "POSITIONAL_ONLY", inspect.Parameter.empty),
        ("values", "POSITIONAL_ONLY", None),
        ("attributes", "KEYWORD_ONLY", None),
        ("kw", "VAR_KEYWORD", inspect.Parameter.empty),
    ],
    "MetricSpec": [
        ("key", "POSITIONAL_OR_KEYWORD", inspect.Parameter.empty),
        ("name", "POSITIONAL_OR_KEYWORD", inspect.Parameter.empty),
        ("kind", "POSITIONAL_OR_KEYWORD", "gauge"),
        ("unit", "POSITIONAL_OR_KEYWORD", ""),
        ("description", "POSITIONAL_OR_KEYWORD", ""),
        ("callback", "POSITIONAL_OR_KEYWORD", None),
    ],
}


@pytest.mark.parametrize("name", sorted(_SIGNATURES))
def test_upstreams_signatures(name: str) -> None:
    parameters = inspect.signature(getattr(instruments, name)).parameters.values()
    assert [(p.name, p.kind.name, p.default) for p in parameters] == _SIGNATURES[name]
    assert name in instruments.__all__
