"""Upstream's next set-up API beside v0.2.0's: a set-up that passes no rank reads its identity
from the resource attributes and exports on every process; one that passes rank=,
world_size= or export_strategy= behaves as in v0.2.0. Also is_telemetry_initialized and
span_cm(context=...)."""

from __future__ import annotations

import inspect
import logging
from collections.abc import Mapping
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import nemo.lens
from nemo.lens import fallbacks, span_cm
from nemo.lens.config import NemoLensConfig
from nemo.lens.handle import TelemetryHandle, is_telemetry_initialized, setup_telemetry
from nemo.lens.propagation import extract_context
from nemo.lens.resources import OTEL_RESOURCE_ATTRIBUTES, encode_resource_attributes

pytestmark = pytest.mark.usefixtures("clean_env", "unset_providers", "_info")


@pytest.fixture
def _info(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="nemo.lens.handle")


_NO_RANK = "was given no rank and found no"
_NEXT_KEYS = ("nv.dl.rank", "nv.dl.world_size")


def _config(**fields: Any) -> NemoLensConfig:
    fields.setdefault("enabled", True)
    fields.setdefault("exporter", "none")
    fields.setdefault("metrics_enabled", False)
    fields.setdefault("run_id", "run7")
    return NemoLensConfig(**fields)


def _one_span(handle: TelemetryHandle, exporter: InMemorySpanExporter) -> ReadableSpan:
    handle.tracer.start_span("work").end()
    handle.shutdown()
    (span,) = exporter.get_finished_spans()
    return span


def _identity(span: ReadableSpan) -> Mapping[str, object]:
    attributes = span.resource.attributes
    keys = ("dl.rank", "dl.world_size", "nemo.rank", "service.instance.id", *_NEXT_KEYS)
    return {key: attributes.get(key) for key in keys}


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    """What set-up said of this process's identity (logged at INFO: see migrating.md)."""
    return [r.getMessage() for r in caplog.records if _NO_RANK in r.getMessage()]


# -- where a rank-less set-up finds its identity ------------------------------------------


@pytest.mark.parametrize("key", ["nv.dl.rank", "dl.rank"])
def test_the_rank_comes_from_the_resource_attributes(
    key: str, caplog: pytest.LogCaptureFixture
) -> None:
    exporter = InMemorySpanExporter()
    world_key = key.replace("rank", "world_size")
    handle = setup_telemetry(
        _config(), resource_attributes={key: 3, world_key: 8}, span_exporter=exporter
    )
    assert (handle.rank, handle.world_size, handle.is_exporting) == (3, 8, True)
    assert _identity(_one_span(handle, exporter)) == {
        "dl.rank": 3,
        "dl.world_size": 8,
        "nemo.rank": 3,
        "service.instance.id": "run7-rank3",
        "nv.dl.rank": 3,
        "nv.dl.world_size": 8,
    }
    assert _warnings(caplog) == []


def test_a_child_process_reads_what_its_parent_encoded(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # What a launcher hands a spawned worker: the variable, percent-encoded, as text.
    monkeypatch.setenv(
        OTEL_RESOURCE_ATTRIBUTES,
        encode_resource_attributes({"nv.dl.rank": 5, "nv.dl.world_size": 6, "team": "a,b"}),
    )
    exporter = InMemorySpanExporter()
    handle = setup_telemetry(_config(), span_exporter=exporter)
    span = _one_span(handle, exporter)
    assert (handle.rank, handle.world_size) == (5, 6)
    assert span.resource.attributes["service.instance.id"] == "run7-rank5"
    assert span.resource.attributes["team"] == "a,b"
    assert _warnings(caplog) == []


def test_the_callers_attributes_win_over_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(OTEL_RESOURCE_ATTRIBUTES, "nv.dl.rank=5,nv.dl.world_size=6")
    handle = setup_telemetry(_config(), resource_attributes={"dl.rank": "1", "dl.world_size": 2})
    assert (handle.rank, handle.world_size) == (1, 2)


def test_every_enabled_process_exports_whatever_the_configured_strategy() -> None:
    # v0.2.0's single_rank strategy would leave rank 3 out; a rank-less set-up does not ask it.
    config = _config(export_strategy="single_rank", export_rank=0)
    exporter = InMemorySpanExporter()
    handle = setup_telemetry(
        config, resource_attributes={"nv.dl.rank": 3, "nv.dl.world_size": 4}, span_exporter=exporter
    )
    assert handle.is_exporting
    assert [span.name for span in [_one_span(handle, exporter)]] == ["work"]


def test_no_rank_known_is_said_and_v020s_identity_sent(caplog: pytest.LogCaptureFixture) -> None:
    exporter = InMemorySpanExporter()
    handle = setup_telemetry(_config(), span_exporter=exporter)
    assert (handle.rank, handle.world_size, handle.is_exporting) == (0, 1, True)
    # Every key v0.2.0's resource promises is still sent.
    assert _identity(_one_span(handle, exporter)) == {
        "dl.rank": 0,
        "dl.world_size": 1,
        "nemo.rank": 0,
        "service.instance.id": "run7-rank0",
        # Upstream's next keys say only what is known: a made-up rank is not sent under them.
        "nv.dl.rank": None,
        "nv.dl.world_size": None,
    }
    (warning,) = _warnings(caplog)
    assert _NO_RANK + " nv.dl.rank and nv.dl.world_size" in warning
    assert "reports rank 0 of 1" in warning
    assert "resource_attributes={'nv.dl.rank': rank, 'nv.dl.world_size': world_size}" in warning


def test_a_rank_without_a_world_size_warns_of_the_world_size(
    caplog: pytest.LogCaptureFixture,
) -> None:
    handle = setup_telemetry(_config(), resource_attributes={"nv.dl.rank": 2})
    assert (handle.rank, handle.world_size) == (2, 3)
    (warning,) = _warnings(caplog)
    assert _NO_RANK + " nv.dl.world_size in" in warning
    assert "reports rank 2 of 3" in warning


def test_a_disabled_set_up_says_nothing(caplog: pytest.LogCaptureFixture) -> None:
    setup_telemetry(_config(enabled=False))
    assert _warnings(caplog) == []


@pytest.mark.parametrize(
    ("attributes", "environment", "message"),
    [
        (
            {"nv.dl.rank": "three"},
            "",
            "nv.dl.rank='three' in resource_attributes is not a whole number >= 0; set it to "
            "this process's value (like nv.dl.rank=0) or remove it",
        ),
        ({"dl.rank": -1}, "", "dl.rank=-1 in resource_attributes is not a whole number"),
        ({"dl.rank": True}, "", "dl.rank=True in resource_attributes is not a whole number"),
        (
            {},
            "nv.dl.world_size=x",
            "nv.dl.world_size='x' in OTEL_RESOURCE_ATTRIBUTES is not a whole number",
        ),
        (
            {"nv.dl.rank": 1, "dl.rank": 2},
            "",
            "resource_attributes holds nv.dl.rank=1, dl.rank=2, which disagree; set one "
            "value, under nv.dl.rank",
        ),
        (
            {"nv.dl.rank": 4, "nv.dl.world_size": 4},
            "",
            "rank 4 is out of range for world_size 4",
        ),
        ({"nv.dl.world_size": 0}, "", "world_size must be at least 1, got 0"),
    ],
)
def test_a_bad_identity_is_refused_and_nothing_changes(
    attributes: Mapping[str, Any],
    environment: str,
    message: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(OTEL_RESOURCE_ATTRIBUTES, environment)
    with pytest.raises(ValueError) as raised:
        setup_telemetry(_config(), resource_attributes=attributes)
    assert message in str(raised.value)
    assert not is_telemetry_initialized()


# -- v0.2.0's arguments keep v0.2.0's behaviour ----------------------------------------------


def test_a_rank_passed_wins_over_the_attributes_and_the_strategy_decides(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv(OTEL_RESOURCE_ATTRIBUTES, "nv.dl.rank=0,nv.dl.world_size=1")
    config = _config(export_strategy="single_rank", export_rank=0)
    handle = setup_telemetry(config, rank=3, world_size=4)
    assert (handle.rank, handle.world_size, handle.is_exporting) == (3, 4, False)
    assert _warnings(caplog) == []


@pytest.mark.parametrize(
    "arguments",
    [{"world_size": 4}, {"export_strategy": "all_ranks"}, {"rank": 0}],
    ids=["world_size", "export_strategy", "rank"],
)
def test_any_of_v020s_arguments_makes_the_set_up_v020s(
    arguments: dict[str, Any], monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv(OTEL_RESOURCE_ATTRIBUTES, "nv.dl.rank=2,nv.dl.world_size=5")
    handle = setup_telemetry(_config(), **arguments)
    assert handle.rank == 0  # v0.2.0's default, not the variable's 2
    assert handle.world_size == arguments.get("world_size", 1)
    assert _warnings(caplog) == []


def test_a_rank_passed_is_sent_under_upstreams_next_keys_too(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A dashboard on upstream's next keys finds a v0.2.0-style job's ranks; the rank passed
    # wins over the variable's, as it does for dl.rank.
    monkeypatch.setenv(OTEL_RESOURCE_ATTRIBUTES, "nv.dl.rank=0,nv.dl.world_size=1")
    monkeypatch.setenv("LOCAL_RANK", "1")
    exporter = InMemorySpanExporter()
    config = _config(export_strategy="all_ranks")
    handle = setup_telemetry(config, rank=3, world_size=4, span_exporter=exporter)
    attributes = _one_span(handle, exporter).resource.attributes
    assert {key: attributes.get(key) for key in _NEXT_KEYS} == {
        "nv.dl.rank": 3,
        "nv.dl.world_size": 4,
    }
    assert attributes.get("nv.dl.local_rank") == attributes.get("nemo.local_rank") == 1


def test_a_strategy_passed_alone_still_decides() -> None:
    def never(config: NemoLensConfig, rank: int, world_size: int) -> bool:
        return False

    assert not setup_telemetry(_config(), export_strategy=never).is_exporting


def test_the_signature_still_reads_as_v020s() -> None:
    parameters = inspect.signature(setup_telemetry).parameters
    assert list(parameters)[:4] == ["config", "rank", "world_size", "resource_attributes"]
    assert (parameters["rank"].default, parameters["world_size"].default) == (0, 1)
    assert "rank: 'int' = 0, world_size: 'int' = 1" in str(inspect.signature(setup_telemetry))


# -- the public "already set up" check ---------------------------------------------------


def test_is_telemetry_initialized_follows_the_active_set_up() -> None:
    assert nemo.lens.is_telemetry_initialized is is_telemetry_initialized
    assert not is_telemetry_initialized()
    setup_telemetry(_config(enabled=False))
    assert not is_telemetry_initialized()
    handle = setup_telemetry(_config(), rank=0, world_size=1)
    assert is_telemetry_initialized()
    handle.shutdown()
    assert not is_telemetry_initialized()


def test_it_reads_the_same_flag_as_v020s_private_name() -> None:
    import nemo.lens.handle as lens_handle

    lens_handle._INITIALIZED = True  # what a v0.2.0 test fixture may do
    assert is_telemetry_initialized()
    lens_handle._INITIALIZED = False
    assert not is_telemetry_initialized()


# -- span_cm(context=...) ----------------------------------------------------------------

_TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


def test_span_cm_continues_an_inbound_traceparent() -> None:
    exporter = InMemorySpanExporter()
    handle = setup_telemetry(_config(), rank=0, world_size=1, span_exporter=exporter)
    inbound = extract_context({"traceparent": _TRACEPARENT})
    # "outer" is a current span the inbound context must win over.
    with span_cm("outer"), span_cm("handle.request", context=inbound):
        pass
    handle.shutdown()
    request = next(s for s in exporter.get_finished_spans() if s.name == "handle.request")
    assert f"{request.context.trace_id:032x}" == "0af7651916cd43dd8448eb211c80319c"
    assert request.parent is not None
    assert f"{request.parent.span_id:016x}" == "b7ad6b7169203331"


def test_a_context_that_is_not_one_stays_the_attribute_it_was() -> None:
    exporter = InMemorySpanExporter()
    handle = setup_telemetry(_config(), rank=0, world_size=1, span_exporter=exporter)
    with span_cm("s", context="eval-set"):  # type: ignore[arg-type]
        pass
    handle.shutdown()
    (span,) = exporter.get_finished_spans()
    assert span.attributes is not None and span.attributes["context"] == "eval-set"


def test_the_fallback_takes_the_context_too() -> None:
    with fallbacks.span_cm("s", context=extract_context({"traceparent": _TRACEPARENT})) as span:
        assert span is None
