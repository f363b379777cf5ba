"""The recording path (nemo.lens._sdk.recording) exports exactly what the SDK's spans export.

The same workload -- primitives with attributes, events, links, exceptions,
kinds and nesting, interleaved with spans of the application's own tracer -- is
run once on the recording path (nemo.lens built the pipeline) and once on the
SDK path (a span processor of the application's own switches recording off).
Every exported record is compared field by field, ids replaced by their order
of appearance and times by their order: through a ``span_exporter=`` (which
receives ``ReadableSpan`` s), through the ``file`` and ``console`` exporters
(whose lines the recording path writes from the recorded fields) and through
OpenTelemetry's OTLP exporters over HTTP and gRPC (which are handed the
recorded spans as they are), as a receiver gets them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import SpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Link, SpanKind, Status, StatusCode
from opentelemetry.util._once import Once

from nemo.lens import managed_span, semconv, span_cm, trace_fn
from nemo.lens._sdk.exporters.encoding import span_to_dict
from nemo.lens.config import NemoLensConfig
from nemo.lens.handle import TelemetryHandle, setup_telemetry
from nemo.lens.testing import reset as _reset_for_testing
from tests.trace_file import spans_in

pytestmark = pytest.mark.usefixtures("clean_env", "unset_providers")


@trace_fn("step", "work.traced")
def _traced(value: int) -> int:
    trace.get_current_span().set_attribute("value", value)
    return value * 2


def _workload() -> None:
    user = trace.get_tracer("user.code")
    with managed_span("step", "outer", iteration=3, model="m", password="hide me") as outer:
        assert outer is not None
        outer.add_event("checkpoint.saved", {"bytes": 1024, "path": "ckpt"})
        outer.set_attribute("later", 1.5)
        outer.set_attributes({"flags": [1, 2, 3], "ok": True})
        with span_cm("inner.cm", group="forward_backward", layer=7) as inner:
            inner.set_status(Status(StatusCode.OK))
            with user.start_as_current_span("user.child", kind=SpanKind.CLIENT) as child:
                child.set_attribute("under", "inner")
                with managed_span("forward_backward", "under.user", kind=SpanKind.PRODUCER):
                    _traced(4)
        link = Link(outer.get_span_context(), {"why": "test"})
        server = SpanKind.SERVER
        with managed_span("forward_backward", "linked", links=[link], kind=server) as linked:
            assert linked is not None
            linked.update_name("linked.renamed")
            linked.record_exception(ValueError("noted"), {"extra": "x"})
        with pytest.raises(RuntimeError), managed_span("step", "fails", count=None):
            raise RuntimeError("boom")
        with pytest.raises(KeyError), span_cm("fails.quietly", record_exception=False):
            raise KeyError("k")
        with span_cm("status.error") as errored:
            errored.set_status(StatusCode.ERROR, "bad")
    with user.start_as_current_span("user.root"), managed_span("step", "under.user.root"):
        pass


def _normalise(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Ids replaced by their order of appearance, times by their rank, the lifetime id
    dropped; sorted by name."""
    ids: dict[str, int] = {}

    def number(value: str | None) -> int | None:
        return None if value is None else ids.setdefault(value, len(ids))

    times = sorted(
        {r[key] for r in records for key in ("start_time_unix_nano", "end_time_unix_nano")}
    )
    rank = {time: index for index, time in enumerate(times)}
    normalised = []
    for record in sorted(records, key=lambda r: r["start_time_unix_nano"]):
        record = dict(record)
        # Each set-up has a lifetime id of its own; everything else is the same.
        record["resource"] = {
            k: v for k, v in record["resource"].items() if k != semconv.LIFETIME_ID
        }
        record.pop("lifetime", None)
        record["trace_id"] = number(record["trace_id"])
        record["span_id"] = number(record["span_id"])
        record["parent_span_id"] = number(record["parent_span_id"])
        record["start_time_unix_nano"] = rank[record["start_time_unix_nano"]]
        record["end_time_unix_nano"] = rank[record["end_time_unix_nano"]]
        record["events"] = [
            {**event, "time_unix_nano": "set" if event["time_unix_nano"] else None}
            for event in record["events"]
        ]
        record["links"] = [
            {**link, "trace_id": number(link["trace_id"]), "span_id": number(link["span_id"])}
            for link in record["links"]
        ]
        normalised.append(record)
    return sorted(normalised, key=lambda r: str(r["name"]))


def _run(
    make: Callable[[], TelemetryHandle], recording: bool, read: Callable[[], list[dict[str, Any]]]
) -> list[dict[str, Any]]:
    handle = make()
    try:
        provider: Any = handle.tracer_provider
        if not recording:
            provider.add_span_processor(SpanProcessor())
        assert provider.records is recording
        _workload()
    finally:
        handle.shutdown()
    records = read()
    _reset_for_testing()
    trace._TRACER_PROVIDER_SET_ONCE = Once()
    trace._TRACER_PROVIDER = None
    return _normalise(records)


def _config(**overrides: Any) -> NemoLensConfig:
    return NemoLensConfig(
        enabled=True, span_groups="all", metrics_enabled=False, run_id="same", **overrides
    )


def test_a_span_exporter_receives_the_same_spans_on_both_paths() -> None:
    exported: dict[bool, list[dict[str, Any]]] = {}
    for recording in (True, False):
        memory = InMemorySpanExporter()
        exported[recording] = _run(
            lambda memory=memory: setup_telemetry(_config(), span_exporter=memory),  # type: ignore[misc]
            recording,
            lambda memory=memory: [span_to_dict(s) for s in memory.get_finished_spans()],  # type: ignore[misc]
        )
    assert len(exported[True]) == 11
    for fast, sdk in zip(exported[True], exported[False], strict=True):
        assert fast == sdk
        assert list(fast["attributes"]) == list(sdk["attributes"])  # in the same order


def test_the_file_exporter_writes_the_same_lines_on_both_paths(tmp_path: Path) -> None:
    written: dict[bool, list[dict[str, Any]]] = {}
    for recording in (True, False):
        path = tmp_path / f"spans-{recording}.jsonl"
        written[recording] = _run(
            lambda path=path: setup_telemetry(_config(exporter="file", trace_file=str(path))),  # type: ignore[misc]
            recording,
            lambda path=path: spans_in(path),  # type: ignore[misc]
        )
    assert len(written[True]) == 11
    for fast, sdk in zip(written[True], written[False], strict=True):
        assert fast == sdk
        assert list(fast["attributes"]) == list(sdk["attributes"])
    outer = next(r for r in written[True] if r["name"] == "outer")
    assert outer["attributes"]["password"] == "[REDACTED]"


def _otlp_records(requests: list[Any]) -> list[dict[str, Any]]:
    """Every span of these ``ExportTraceServiceRequest`` s, as a dict keyed as the file's
    lines are (the resource's attributes under ``resource``), values as protobuf's JSON
    mapping gives them."""
    from google.protobuf.json_format import MessageToDict  # type: ignore[import-untyped]

    records = []
    for message in requests:
        for resource_spans in message.resource_spans:
            resource = {
                pair.key: MessageToDict(pair.value) for pair in resource_spans.resource.attributes
            }
            for scope_spans in resource_spans.scope_spans:
                scope = MessageToDict(scope_spans.scope)
                for span in scope_spans.spans:
                    record = MessageToDict(span, preserving_proto_field_name=True)
                    record.setdefault("parent_span_id", None)
                    record.setdefault("events", [])
                    record.setdefault("links", [])
                    records.append({**record, "resource": resource, "scope": scope})
    return records


def _http_requests(receiver: Any) -> list[Any]:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    return [ExportTraceServiceRequest.FromString(request.body) for request in receiver.requests]


@pytest.mark.parametrize("protocol", ["http/protobuf", "grpc"])
def test_an_otlp_exporter_receives_the_same_spans_on_both_paths(
    protocol: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # OpenTelemetry's OTLP exporters are handed the recorded spans as they are (no SDK
    # span is built for them): what they send must not change.
    from tests.reliability.conftest import GrpcReceiver, OtlpReceiver

    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", protocol)
    received: dict[bool, list[dict[str, Any]]] = {}
    for recording in (True, False):
        receiver: Any = OtlpReceiver() if protocol == "http/protobuf" else GrpcReceiver()
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint)
        requests = (
            (lambda receiver=receiver: _http_requests(receiver))
            if protocol == "http/protobuf"
            else (lambda receiver=receiver: list(receiver.requests))
        )
        try:
            received[recording] = _run(
                lambda: setup_telemetry(_config(exporter="otlp")),
                recording,
                lambda requests=requests: _otlp_records(requests()),  # type: ignore[misc]
            )
        finally:
            receiver.close()
    assert len(received[True]) == 11
    for fast, sdk in zip(received[True], received[False], strict=True):
        assert fast == sdk
    outer = next(r for r in received[True] if r["name"] == "outer")
    attributes = {pair["key"]: pair["value"] for pair in outer["attributes"]}
    assert attributes["password"] == {"string_value": "[REDACTED]"}
    assert any(r["events"] for r in received[True]) and any(r["links"] for r in received[True])


def _file_fields(record: dict[str, Any]) -> dict[str, Any]:
    """A span of the SDK's to_json layout in the file line's fields; times stay ISO text,
    whose order is their order (all _normalise keeps of them)."""

    def hex_id(value: str | None) -> str | None:
        return None if value is None else value.removeprefix("0x")

    return {
        "name": record["name"],
        "trace_id": hex_id(record["context"]["trace_id"]),
        "span_id": hex_id(record["context"]["span_id"]),
        "parent_span_id": hex_id(record["parent_id"]),
        "kind": record["kind"].removeprefix("SpanKind."),
        "start_time_unix_nano": record["start_time"],
        "end_time_unix_nano": record["end_time"],
        "status": {
            "code": record["status"]["status_code"],
            "description": record["status"].get("description"),
        },
        "attributes": record["attributes"],
        "events": [
            {"name": e["name"], "time_unix_nano": e["timestamp"], "attributes": e["attributes"]}
            for e in record["events"]
        ],
        "links": [
            {
                "trace_id": hex_id(link["context"]["trace_id"]),
                "span_id": hex_id(link["context"]["span_id"]),
                "attributes": link["attributes"],
            }
            for link in record["links"]
        ],
        "resource": record["resource"]["attributes"],
    }


@pytest.mark.parametrize("console_format", ["otel", "lens"])
def test_the_console_exporter_prints_the_same_lines_on_both_paths(
    capsys: pytest.CaptureFixture[str], console_format: str
) -> None:
    def read() -> list[dict[str, Any]]:
        lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
        # The SDK's to_json layout, in the file line's fields (what _normalise reads).
        return [_file_fields(line) for line in lines] if console_format == "otel" else lines

    printed: dict[bool, list[dict[str, Any]]] = {}
    for recording in (True, False):
        capsys.readouterr()
        printed[recording] = _run(
            lambda: setup_telemetry(_config(exporter="console", console_format=console_format)),
            recording,
            read,
        )
    assert len(printed[True]) == 11
    for fast, sdk in zip(printed[True], printed[False], strict=True):
        assert fast == sdk
        assert list(fast["attributes"]) == list(sdk["attributes"])


def test_otlp_exporters_are_handed_recorded_spans_as_they_are_and_others_the_sdks() -> None:
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as Grpc
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as Http
    from opentelemetry.sdk.trace import ReadableSpan

    from nemo.lens._core import state
    from nemo.lens._sdk.exporters.guard import SpanGuard
    from nemo.lens._sdk.exporters.health import ExportHealth
    from nemo.lens._sdk.recording import RecordingSpan

    handle = setup_telemetry(_config(), span_exporter=InMemorySpanExporter())
    recorded: list[Any] = []
    tracer: Any = state.recorder
    tracer.sink = recorded.append
    try:
        with managed_span("step", "plain", n=1):
            pass
        with managed_span("step", "secret") as span:
            assert span is not None
            span.set_attribute("api_key", "hunter2")  # redacted on its way out
    finally:
        handle.shutdown()
    plain, secret = recorded
    assert type(plain) is RecordingSpan and type(secret) is RecordingSpan
    for exporter in (Grpc(), Http()):
        handed: list[Any] = SpanGuard(exporter, ExportHealth()).cleaned(recorded, {})
        assert handed[0] is plain
        # One that needs redacting is copied, as the SDK's span would be.
        assert handed[1] is not secret and handed[1].attributes["api_key"] == "[REDACTED]"
    for other in SpanGuard(InMemorySpanExporter(), ExportHealth()).cleaned(recorded, {}):
        assert isinstance(other, ReadableSpan) and not isinstance(other, RecordingSpan)


def test_spans_nest_across_the_application_tracer_on_the_recording_path() -> None:
    memory = InMemorySpanExporter()
    handle = setup_telemetry(_config(), span_exporter=memory)
    try:
        _workload()
    finally:
        handle.shutdown()
    spans = {span.name: span for span in memory.get_finished_spans()}
    names = {span.context.span_id: name for name, span in spans.items()}
    parent_of = {
        name: names.get(span.parent.span_id) if span.parent else None
        for name, span in spans.items()
    }
    assert parent_of["user.child"] == "inner.cm"
    assert parent_of["under.user"] == "user.child"
    assert parent_of["work.traced"] == "under.user"
    assert parent_of["under.user.root"] == "user.root"
    assert parent_of["outer"] is None


def _batch_workload() -> None:
    """Spans of repeated and changing shapes: the batch encoder's cached pieces and
    every way out of them (values, keys, names, kinds, status, events, parents)."""
    user = trace.get_tracer("user.code")
    for step in range(3):
        with managed_span("step", "loop", iteration=step, model="m", ratio=0.5, ok=step == 1):
            with managed_span("forward_backward", "layer", layer=step):
                pass
            with managed_span("forward_backward", "layer", layer=str(step)):  # another type
                pass
            with managed_span("forward_backward", "layer", layer=float("nan")):  # not plain
                pass
    with managed_span("step", "no.attributes.at.all"):
        pass
    given: dict[str, Any] = {semconv.SPAN_GROUP: "mine", "n": 1}
    with managed_span("step", "tag.given", **given):
        pass  # a keyword that is also a tag: the tag's value, in the keyword's place
    with managed_span("step", "tagged.then.set", n=1) as span:
        assert span is not None
        span.set_attribute("later", 2)  # after the group's tags, as on the SDK's span
    span_cm_names = ("plain", "ünïcode", "two\nlines", '%s %d {} \\ "quoted"')
    for name in span_cm_names:
        with span_cm(name, size=2**70 if name == "plain" else 1) as span:
            span.set_attribute("%key", "100%")
    with managed_span("step", "secret", api_key="hunter2", token=3):
        pass
    with managed_span("step", "kinds", kind=SpanKind.CLIENT, n=1):
        pass
    with managed_span("step", "flags", flags=[1, 2], empty=None):
        pass
    with span_cm("status", n=1) as span:
        span.set_status(StatusCode.ERROR, "bad")
    with span_cm("event", n=1) as span:
        span.add_event("e", {"k": 1})
    with user.start_as_current_span("user.parent"), managed_span("step", "under.sdk", n=1):
        pass


@pytest.mark.parametrize("layout_name", ["resource-on-every-line", "lifetime"])
@pytest.mark.parametrize("compile_after", [1, 10**9], ids=["compiled-writers", "pieces-only"])
def test_the_batch_encoder_writes_each_line_as_the_sdk_span_would_be_written(
    compile_after: int, layout_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A shape's lines are joined from its pieces until a writer is compiled for it: with
    # 1, every shape's second line on is the compiled writer's; with 10**9, none is.
    # Either way, in either layout (the console's lines, the file's), each is the line
    # encode_span writes for the SDK's span.
    from nemo.lens._core import state
    from nemo.lens._sdk.exporters import encoding
    from nemo.lens._sdk.exporters.encoding import (
        RESOURCE_ON_EVERY_LINE,
        LineLayout,
        encode_span,
        span_lines,
    )
    from nemo.lens._sdk.exporters.redaction import clean_span
    from nemo.lens._sdk.exporters.trace_file import LifetimeLayout
    from nemo.lens._sdk.recording import RecordingSpan

    handle = setup_telemetry(_config(), span_exporter=InMemorySpanExporter())
    recorded: list[Any] = []
    tracer: Any = state.recorder
    tracer.sink = recorded.append
    try:
        _batch_workload()
        _batch_workload()  # the second time through, every shape is known
    finally:
        handle.shutdown()
    assert recorded and all(type(span) is RecordingSpan for span in recorded)
    layout: LineLayout = RESOURCE_ON_EVERY_LINE if layout_name != "lifetime" else LifetimeLayout()
    general: list[Any] = []

    def encode(span: Any, layout: LineLayout = RESOURCE_ON_EVERY_LINE) -> str:
        general.append(span)
        return encode_span(span, layout)

    # First, while the primitives' spans still keep their group's tags apart.
    monkeypatch.setattr(encoding, "_COMPILE_AFTER", compile_after)
    with monkeypatch.context() as patched:
        patched.setattr(encoding, "encode_span", encode)
        lines = span_lines(recorded, layout, {})
    expected = [encode_span(clean_span(span.readable(), {}), layout) for span in recorded]
    assert lines == expected
    if layout_name == "lifetime":
        assert all(
            line.endswith(f'"lifetime":"{tracer.resource.attributes[semconv.LIFETIME_ID]}"}}')
            for line in lines
        )
    shapes = [shape for _, shape in layout.shapes(tracer).values() if shape is not None]
    compiled = [shape for shape in shapes if shape.write != shape._join]
    assert len(compiled) >= (5 if compile_after == 1 else 0)
    assert compile_after == 1 or not compiled
    # The common shapes took the fast way; only the ones the docstring names did not.
    fast = {span._name for span in recorded} - {span.name for span in general}
    assert {"loop", "no.attributes.at.all", "under.sdk", "tagged.then.set"} <= fast
    slow = {span.name for span in general}
    assert {"secret", "kinds", "flags", "status", "event", "plain", "tag.given"} <= slow
    given = next(span for span in recorded if span._name == "tag.given")
    assert list(given.attributes.items())[:2] == [(semconv.SPAN_GROUP, "step"), ("n", 1)]
    later = next(span for span in recorded if span._name == "tagged.then.set")
    assert list(later.attributes) == ["n", semconv.SPAN_GROUP, semconv.SPAN_CATEGORY, "later"]
    # A batch that begins with an SDK span is written the same way.
    sdk_span = recorded[0].readable()
    assert span_lines([sdk_span, *recorded], layout, {}) == [
        encode_span(sdk_span, layout),
        *expected,
    ]


def test_a_block_that_begins_after_set_up_changed_is_traced_by_the_new_set_up() -> None:
    first = InMemorySpanExporter()
    handle = setup_telemetry(_config(), span_exporter=first)
    scope = managed_span("step", "begun.late", n=1)  # made while the first set-up records
    handle.shutdown()
    second = InMemorySpanExporter()
    handle = setup_telemetry(_config(), span_exporter=second)
    try:
        with pytest.raises(ValueError), scope as span:
            assert span is not None and span.is_recording()
            raise ValueError("inside")
    finally:
        handle.shutdown()
    assert first.get_finished_spans() == ()
    (late,) = second.get_finished_spans()
    assert late.name == "begun.late"
    assert late.attributes is not None and late.attributes["n"] == 1
    assert late.status.status_code is StatusCode.ERROR
    assert trace.get_current_span() is trace.INVALID_SPAN  # detached on the way out


def test_the_recording_tracer_as_a_decorator_records_a_span_for_every_call() -> None:
    from nemo.lens._core import state
    from nemo.lens._sdk.recording import RecordingTracer

    memory = InMemorySpanExporter()
    handle = setup_telemetry(_config(), span_exporter=memory)
    tracer = state.recorder
    assert isinstance(tracer, RecordingTracer)
    try:

        @tracer.start_as_current_span("decorated")
        def work(value: int) -> int:
            trace.get_current_span().set_attribute("value", value)
            return value

        assert [work(1), work(2)] == [1, 2]
    finally:
        handle.shutdown()
    spans = memory.get_finished_spans()
    assert [(s.name, (s.attributes or {}).get("value")) for s in spans] == [
        ("decorated", 1),
        ("decorated", 2),
    ]
    assert spans[0].context.span_id != spans[1].context.span_id
