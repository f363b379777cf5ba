"""The console exporter prints upstream v0.2.0's lines: the SDK's own ``to_json(indent=None)``
of each span, one compact object per line; the ``file`` line stays one option away."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Link, SpanKind, Status, StatusCode

from nemo.lens import NemoLensConfig, managed_span, semconv, setup_telemetry
from nemo.lens.groups import SpanGroup

_ISO_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z")
_SDK_KEYS = [
    "name",
    "context",
    "kind",
    "parent_id",
    "start_time",
    "end_time",
    "status",
    "attributes",
    "events",
    "links",
    "resource",
]


@pytest.fixture(autouse=True)
def _isolated(clean_env: None, unset_providers: None) -> None:
    pass


def _strict(line: str) -> dict[str, Any]:
    def reject(constant: str) -> None:
        raise AssertionError(f"non-standard JSON constant {constant} in {line!r}")

    loaded: dict[str, Any] = json.loads(line, parse_constant=reject)
    return loaded


def _emit(tracer: trace.Tracer) -> None:
    with tracer.start_as_current_span("parent", attributes={"iteration": 7}) as parent:
        parent.add_event("checkpoint.saved", {"bytes": 1024})
        with tracer.start_as_current_span(
            "child", kind=SpanKind.CLIENT, links=[Link(parent.get_span_context(), {"why": "t"})]
        ) as child:
            child.set_status(Status(StatusCode.ERROR, "boom"))


def test_each_span_is_printed_as_the_sdks_own_to_json(capsys: pytest.CaptureFixture[str]) -> None:
    config = NemoLensConfig(enabled=True, exporter="console", metrics_enabled=False, run_id="r")
    handle = setup_telemetry(config)
    # The SDK's spans as the SDK hands them to any exporter, to compare the lines with.
    memory = InMemorySpanExporter()
    handle.tracer_provider.add_span_processor(SimpleSpanProcessor(memory))  # type: ignore[attr-defined]
    _emit(handle.tracer)
    lines = capsys.readouterr().out.splitlines()

    assert lines == [span.to_json(indent=None) for span in memory.get_finished_spans()]
    child, parent = (_strict(line) for line in lines)
    assert list(parent) == _SDK_KEYS
    assert re.fullmatch(r"0x[0-9a-f]{32}", parent["context"]["trace_id"])
    assert re.fullmatch(r"0x[0-9a-f]{16}", parent["context"]["span_id"])
    assert parent["parent_id"] is None
    assert child["parent_id"] == parent["context"]["span_id"]
    assert (parent["kind"], child["kind"]) == ("SpanKind.INTERNAL", "SpanKind.CLIENT")
    assert parent["status"] == {"status_code": "UNSET"}
    assert child["status"] == {"status_code": "ERROR", "description": "boom"}
    assert _ISO_TIME.fullmatch(parent["start_time"]) and _ISO_TIME.fullmatch(parent["end_time"])
    assert parent["attributes"] == {"iteration": 7}
    (event,) = parent["events"]
    assert (event["name"], event["attributes"]) == ("checkpoint.saved", {"bytes": 1024})
    assert _ISO_TIME.fullmatch(event["timestamp"])
    assert child["links"] == [{"context": parent["context"], "attributes": {"why": "t"}}]
    assert parent["resource"]["attributes"]["service.instance.id"] == "r-rank0"
    handle.shutdown()


def test_the_primitives_spans_print_as_the_sdk_spans_they_stand_for(
    capsys: pytest.CaptureFixture[str],
) -> None:
    config = NemoLensConfig(
        enabled=True, exporter="console", metrics_enabled=False, span_groups="all"
    )
    handle = setup_telemetry(config)
    with managed_span(SpanGroup.STEP, "train.step", iteration=3) as span:
        assert span is not None
        assert type(span).__name__ == "RecordingSpan"  # the light kind, turned into the SDK's
        span.add_event("loss", {"value": 0.5})
    (line,) = capsys.readouterr().out.splitlines()
    record = _strict(line)
    assert list(record) == _SDK_KEYS
    assert record["kind"] == "SpanKind.INTERNAL"
    assert record["attributes"] == {
        "iteration": 3,
        semconv.SPAN_GROUP: SpanGroup.STEP,
        semconv.SPAN_CATEGORY: SpanGroup.categories()[SpanGroup.STEP],
    }
    assert [(e["name"], e["attributes"]) for e in record["events"]] == [("loss", {"value": 0.5})]
    assert json.dumps(record) == line  # to_json(indent=None)'s own spelling, exactly
    handle.shutdown()


def test_secrets_are_redacted_in_the_sdk_layout(capsys: pytest.CaptureFixture[str]) -> None:
    config = NemoLensConfig(enabled=True, exporter="console", metrics_enabled=False)
    handle = setup_telemetry(config)
    with handle.tracer.start_as_current_span("call") as span:
        span.set_attribute("password", "hunter2-secret")
        span.add_event("reply", {"api_key": "sk-secret-value"})
    out = capsys.readouterr().out
    (record,) = (_strict(line) for line in out.splitlines())
    assert record["attributes"] == {"password": "[REDACTED]"}
    assert record["events"][0]["attributes"] == {"api_key": "[REDACTED]"}
    assert "secret" not in out
    handle.shutdown()


def test_bytes_and_non_finite_values_keep_the_line_strict_json(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # json.dumps, which to_json calls, writes NaN bare and refuses bytes.
    config = NemoLensConfig(enabled=True, exporter="console", metrics_enabled=False)
    handle = setup_telemetry(config)
    with handle.tracer.start_as_current_span("step") as span:
        span.set_attribute("blob", b"\x00\xff")
        span.add_event("e", {"loss": float("nan"), "values": (1.0, float("inf"))})
    (line,) = capsys.readouterr().out.splitlines()
    record = _strict(line)
    assert record["attributes"] == {"blob": "b'\\x00\\xff'"}
    assert record["events"][0]["attributes"] == {"loss": "NaN", "values": [1.0, "Infinity"]}
    handle.shutdown()


def test_console_format_lens_prints_the_file_exporters_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    config = NemoLensConfig(
        enabled=True, exporter="console", metrics_enabled=False, console_format="lens"
    )
    handle = setup_telemetry(config)
    handle.tracer.start_span("step").end()
    (line,) = capsys.readouterr().out.splitlines()
    record = _strict(line)
    assert "start_time_unix_nano" in record and "context" not in record
    assert re.fullmatch(r"[0-9a-f]{32}", record["trace_id"])
    handle.shutdown()


# -- the config field ------------------------------------------------------------------------


def test_console_format_defaults_to_otel_and_reads_its_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert NemoLensConfig().console_format == "otel"
    monkeypatch.setenv("NEMO_LENS_CONSOLE_FORMAT", "lens")
    assert NemoLensConfig.from_env().console_format == "lens"


def test_an_unknown_console_format_names_the_valid_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    expected = (
        "unknown console_format 'json'; use one of: otel, lens (otel: the OpenTelemetry "
        "SDK's to_json per line; lens: the file exporter's line)"
    )
    with pytest.raises(ValueError) as info:
        NemoLensConfig(console_format="json")
    assert str(info.value) == expected
    monkeypatch.setenv("NEMO_LENS_CONSOLE_FORMAT", "json")
    with pytest.raises(ValueError) as info:
        NemoLensConfig.from_env()
    assert str(info.value) == f"NEMO_LENS_CONSOLE_FORMAT='json': {expected}"
    with pytest.raises(TypeError, match=r"NemoLensConfig\.console_format must be a str"):
        NemoLensConfig(console_format=1)  # type: ignore[arg-type]
