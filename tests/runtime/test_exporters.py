"""Exporters by name: console and file JSON lines, OTLP transport selection, replacement."""

from __future__ import annotations

import json
import os
import re
import threading
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import (
    OTLPMetricExporter as GrpcMetricExporter,
)
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
    OTLPSpanExporter as GrpcSpanExporter,
)
from opentelemetry.exporter.otlp.proto.http.metric_exporter import (
    OTLPMetricExporter as HttpMetricExporter,
)
from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
    OTLPSpanExporter as HttpSpanExporter,
)
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace.export import SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Link, SpanKind, Status, StatusCode

from nemo.lens import state, testing
from nemo.lens._core import destinations
from nemo.lens._core.destinations import otlp_protocol, sibling_path
from nemo.lens._sdk.batching import BatchingSpanProcessor
from nemo.lens._sdk.exporters.factory import create_exporter, is_otlp_span_exporter
from nemo.lens._sdk.exporters.jsonl import FileSink, JsonLinesSpanExporter
from nemo.lens.config import NemoLensConfig
from nemo.lens.handle import setup_telemetry
from nemo.lens.providers import (
    FILE_MAX_EXPORT_BATCH_SIZE,
    FILE_MAX_QUEUE_SIZE,
    OTLP_MAX_QUEUE_SIZE,
)
from tests.trace_file import spans_in


@pytest.fixture(autouse=True)
def _isolated(clean_env: None, unset_providers: None, monkeypatch: pytest.MonkeyPatch) -> None:
    # Anything that tries the network goes to a closed local port.
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
    testing.reset()  # (it reads the variables)


def _strict_json(line: str) -> dict[str, Any]:
    def reject(constant: str) -> None:
        raise AssertionError(f"non-standard JSON constant {constant} in {line!r}")

    loaded: dict[str, Any] = json.loads(line, parse_constant=reject)
    return loaded


def _emit_three(tracer: trace.Tracer) -> None:
    with tracer.start_as_current_span("parent", attributes={"iteration": 7}) as parent:
        parent.add_event("checkpoint.saved", {"bytes": 1024})
        with tracer.start_as_current_span(
            "child",
            kind=SpanKind.CLIENT,
            links=[Link(parent.get_span_context(), {"why": "test"})],
        ) as child:
            child.set_status(Status(StatusCode.ERROR, "boom"))
    tracer.start_span("sibling").end()


# -- console ----------------------------------------------------------------------------------


def test_console_lens_format_writes_the_file_line_per_span(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # The console's default is the SDK's to_json (test_console.py); "lens" is the file line.
    cfg = NemoLensConfig(
        enabled=True, exporter="console", metrics_enabled=False, run_id="r", console_format="lens"
    )
    handle = setup_telemetry(cfg, rank=0, world_size=1)
    _emit_three(handle.tracer)
    lines = capsys.readouterr().out.splitlines()

    assert len(lines) == 3  # console export is synchronous: visible before shutdown
    spans = {record["name"]: record for record in map(_strict_json, lines)}
    parent, child, sibling = spans["parent"], spans["child"], spans["sibling"]

    assert re.fullmatch(r"[0-9a-f]{32}", parent["trace_id"])
    assert re.fullmatch(r"[0-9a-f]{16}", parent["span_id"])
    assert parent["parent_span_id"] is None
    assert child["parent_span_id"] == parent["span_id"]
    assert child["trace_id"] == parent["trace_id"]
    assert sibling["trace_id"] != parent["trace_id"]
    assert parent["kind"] == "INTERNAL" and child["kind"] == "CLIENT"
    assert parent["status"] == {"code": "UNSET", "description": None}
    assert child["status"] == {"code": "ERROR", "description": "boom"}
    assert parent["attributes"] == {"iteration": 7}
    (event,) = parent["events"]
    assert event["name"] == "checkpoint.saved" and event["attributes"] == {"bytes": 1024}
    assert isinstance(event["time_unix_nano"], int)
    assert child["links"] == [
        {
            "trace_id": parent["trace_id"],
            "span_id": parent["span_id"],
            "attributes": {"why": "test"},
        }
    ]
    assert parent["start_time_unix_nano"] <= child["start_time_unix_nano"]
    assert child["end_time_unix_nano"] <= parent["end_time_unix_nano"]
    assert parent["resource"]["service.instance.id"] == "r-rank0"
    assert parent["scope"]["name"] == "nemo.lens"


@pytest.mark.parametrize("console_format", ["otel", "lens"])
def test_non_finite_floats_stay_strict_json(
    capsys: pytest.CaptureFixture[str], console_format: str
) -> None:
    cfg = NemoLensConfig(
        enabled=True, exporter="console", metrics_enabled=False, console_format=console_format
    )
    handle = setup_telemetry(cfg)
    with handle.tracer.start_as_current_span("step") as span:
        span.set_attribute("loss", float("nan"))
        span.set_attribute("grad_norm", float("inf"))
        span.set_attribute("values", [1.0, float("-inf")])
    (line,) = capsys.readouterr().out.splitlines()
    record = _strict_json(line)
    assert record["attributes"] == {
        "loss": "NaN",
        "grad_norm": "Infinity",
        "values": [1.0, "-Infinity"],
    }


def test_console_metrics_are_json_lines(capsys: pytest.CaptureFixture[str]) -> None:
    cfg = NemoLensConfig(enabled=True, exporter="console", traces_enabled=False)
    handle = setup_telemetry(cfg)
    handle.meter.create_counter("tokens").add(5)
    handle.shutdown()
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1
    metrics = _strict_json(lines[0])["resource_metrics"][0]["scope_metrics"][0]["metrics"]
    assert metrics[0]["name"] == "tokens"
    assert metrics[0]["data"]["data_points"][0]["value"] == 5


# -- file ----------------------------------------------------------------------------------------


def test_file_exporter_writes_one_valid_line_per_span(tmp_path: Path) -> None:
    template = str(tmp_path / "deep" / "er" / "{service_name}-{run_id}-r{rank}.jsonl")
    cfg = NemoLensConfig(
        enabled=True,
        exporter="file",
        metrics_enabled=False,
        run_id="abc",
        service_name="svc",
        trace_file=template,
    )
    handle = setup_telemetry(cfg, rank=2, world_size=4, export_strategy="all_ranks")
    for i in range(25):
        with handle.tracer.start_as_current_span(f"span-{i}"):
            pass
    assert handle.shutdown() is True

    path = tmp_path / "deep" / "er" / "svc-abc-r2.jsonl"
    records = [_strict_json(line) for line in path.read_text(encoding="utf-8").splitlines()]
    # The lifetime's header first, with the resource; then the spans, which name it.
    header, *spans = records
    assert header["trace_format"] == 2
    assert header["resource"]["nemo.rank"] == 2
    assert sorted(r["name"] for r in spans) == sorted(f"span-{i}" for i in range(25))
    assert all(r["lifetime"] == header["lifetime"] and "resource" not in r for r in spans)


def test_a_large_batch_is_written_in_whole_lines_in_order() -> None:
    # A batch of thousands of lines goes out in several writes (no one text of
    # megabytes); each write ends a line, so no reader or forked writer sees half one.
    class Recorder:
        def __init__(self) -> None:
            self.writes: list[str] = []

        def write(self, text: str) -> None:
            self.writes.append(text)

        def flush(self) -> None:
            """Nothing buffered."""

        def close(self) -> None:
            """Nothing to release."""

    sink = Recorder()
    lines = [json.dumps({"n": n}) for n in range(1000)]
    assert JsonLinesSpanExporter(sink).export_lines(lines) == SpanExportResult.SUCCESS
    assert len(sink.writes) > 1
    assert all(text.endswith("\n") for text in sink.writes)
    assert "".join(sink.writes) == "\n".join(lines) + "\n"


class _Writes:
    """os.write, recording what each call to one descriptor wrote."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.data: list[bytes] = []
        self.fd: int | None = None
        real = os.write

        def write(fd: int, data: Any) -> int:
            if fd == self.fd:
                self.data.append(bytes(data))
            return real(fd, data)

        monkeypatch.setattr(os, "write", write)


def _sink(path: Path, writes: _Writes, **kwargs: Any) -> FileSink:
    sink = FileSink(path, **kwargs)
    writes.fd = sink._fd
    return sink


def test_a_file_sink_writes_a_batch_in_one_system_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each write hands the interpreter lock to the emitting threads: a batch is one.
    writes = _Writes(monkeypatch)
    sink = _sink(tmp_path / "t.jsonl", writes)
    lines = [json.dumps({"n": n, "pad": "x" * 700}) for n in range(4096)]

    assert JsonLinesSpanExporter(sink).export_lines(lines) == SpanExportResult.SUCCESS
    assert JsonLinesSpanExporter(sink).export_lines(lines[:10]) == SpanExportResult.SUCCESS

    assert len(writes.data) == 2
    expected = "\n".join(lines) + "\n" + "\n".join(lines[:10]) + "\n"
    assert (tmp_path / "t.jsonl").read_text(encoding="utf-8") == expected


def test_a_file_sink_writes_whole_texts_in_order_whatever_their_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    writes = _Writes(monkeypatch)
    sink = _sink(tmp_path / "t.jsonl", writes, buffer_bytes=100)
    texts = ["a" * 30 + "\n", "b" * 60 + "\n", "c" * 10 + "\n", "d" * 250 + "\n", "e\n"]

    sink.write_texts(iter(texts))

    # Gathered while they fit, then afresh; the one larger than the buffer on its own.
    assert [len(data) for data in writes.data] == [92, 11, 251, 2]
    assert all(data.endswith(b"\n") for data in writes.data)
    assert (tmp_path / "t.jsonl").read_text(encoding="utf-8") == "".join(texts)


def test_a_forked_child_writes_as_its_parent_did(tmp_path: Path) -> None:
    sink = FileSink(tmp_path / "t.jsonl")
    assert sink._lock.acquire(blocking=False)  # held by a thread the child lacks
    sink._after_fork_in_child()
    sink.write_texts(["one\n"])
    assert (tmp_path / "t.jsonl").read_text(encoding="utf-8") == "one\n"


def test_a_file_sink_refuses_a_buffer_of_nothing(tmp_path: Path) -> None:
    with pytest.raises(
        ValueError, match=r"FileSink\(buffer_bytes=\.\.\.\) must be at least 1, got 0"
    ):
        FileSink(tmp_path / "t.jsonl", buffer_bytes=0)


def test_file_exporter_default_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    cfg = NemoLensConfig(enabled=True, exporter="file", metrics_enabled=False, run_id="xyz")
    handle = setup_telemetry(cfg)
    handle.tracer.start_span("one").end()
    handle.shutdown()
    path = tmp_path / "traces" / "nemo-xyz-rank0.jsonl"
    assert [span["name"] for span in spans_in(path)] == ["one"]


def test_file_exporter_is_safe_across_threads(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    cfg = NemoLensConfig(enabled=True, exporter="file", metrics_enabled=False, trace_file=str(path))
    handle = setup_telemetry(cfg)

    def work(worker: int) -> None:
        for i in range(200):
            with handle.tracer.start_as_current_span(f"w{worker}-{i}"):
                pass

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    handle.shutdown()

    names = [span["name"] for span in spans_in(path)]
    assert len(names) == 1600
    assert len(set(names)) == 1600


def test_force_flush_makes_file_spans_visible_without_shutdown(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    cfg = NemoLensConfig(enabled=True, exporter="file", metrics_enabled=False, trace_file=str(path))
    handle = setup_telemetry(cfg)
    handle.tracer.start_span("early").end()
    assert handle.force_flush(timeout_ms=2000) is True
    assert [span["name"] for span in spans_in(path)] == ["early"]


def test_file_exporter_uses_the_large_batch_queue(tmp_path: Path) -> None:
    cfg = NemoLensConfig(
        enabled=True, exporter="file", metrics_enabled=False, trace_file=str(tmp_path / "t.jsonl")
    )
    handle = setup_telemetry(cfg)
    processors = handle._pipeline.tracer_provider._active_span_processor._span_processors  # type: ignore[union-attr]
    (batch,) = [p for p in processors if isinstance(p, BatchingSpanProcessor)]
    assert batch.max_queue_size == FILE_MAX_QUEUE_SIZE
    assert batch.max_export_batch_size == FILE_MAX_EXPORT_BATCH_SIZE


def test_file_metrics_go_to_a_sibling_file(tmp_path: Path) -> None:
    trace_file = tmp_path / "run.jsonl"
    cfg = NemoLensConfig(enabled=True, exporter="file", trace_file=str(trace_file))
    handle = setup_telemetry(cfg)
    handle.meter.create_counter("steps").add(3)
    handle.tracer.start_span("s").end()
    handle.shutdown()
    assert sibling_path(str(trace_file), "metrics") == str(tmp_path / "run.metrics.jsonl")
    (metrics_line,) = (tmp_path / "run.metrics.jsonl").read_text().splitlines()
    assert '"steps"' in metrics_line
    assert len(spans_in(trace_file)) == 1


def test_unwritable_trace_file_fails_set_up_and_installs_nothing(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    bad = NemoLensConfig(
        enabled=True,
        exporter="file",
        metrics_enabled=False,
        trace_file=str(blocker / "t.jsonl"),
    )
    # A ValueError naming the variable (docs/guarantees.md), no longer the OS's NotADirectoryError.
    with pytest.raises(ValueError, match=r"NEMO_LENS_TRACE_FILE.*is a file, not a directory"):
        setup_telemetry(bad)
    assert isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)
    assert state.enabled_span_groups() == frozenset()

    good = NemoLensConfig(
        enabled=True, exporter="file", metrics_enabled=False, trace_file=str(tmp_path / "t.jsonl")
    )
    handle = setup_telemetry(good)
    assert handle.is_exporting is True


# -- otlp ------------------------------------------------------------------------------------------


def test_otlp_defaults_to_grpc() -> None:
    assert otlp_protocol("traces") == "grpc"
    assert isinstance(create_exporter("traces", "otlp"), GrpcSpanExporter)
    assert isinstance(create_exporter("metrics", "otlp"), GrpcMetricExporter)


def test_otlp_http_for_every_signal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
    assert isinstance(create_exporter("traces", "otlp"), HttpSpanExporter)
    assert isinstance(create_exporter("metrics", "otlp"), HttpMetricExporter)


def test_otlp_per_signal_protocol_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "grpc")
    assert isinstance(create_exporter("traces", "otlp"), GrpcSpanExporter)
    assert isinstance(create_exporter("metrics", "otlp"), HttpMetricExporter)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", " GRPC ")
    assert isinstance(create_exporter("metrics", "otlp"), GrpcMetricExporter)


def test_only_opentelemetrys_own_otlp_span_exporters_are_handed_recorded_spans() -> None:
    # Their encoder reads a span only through a finished span's public fields; a
    # subclass may read more, so it gets the SDK's span as any other exporter does.
    class Custom(HttpSpanExporter):
        pass

    assert is_otlp_span_exporter(GrpcSpanExporter())
    assert is_otlp_span_exporter(HttpSpanExporter())
    assert not is_otlp_span_exporter(Custom())
    assert not is_otlp_span_exporter(InMemorySpanExporter())
    assert not is_otlp_span_exporter(GrpcMetricExporter())


def test_the_job_resource_is_hashed_once_and_as_the_sdks(monkeypatch: pytest.MonkeyPatch) -> None:
    # The OTLP encoders hash the resource once per span; the SDK's hash is a JSON dump.
    from opentelemetry.sdk.resources import Resource

    calls: list[object] = []

    def dumps(value: object, **options: Any) -> str:
        calls.append(value)
        return json.dumps(value, **options)

    monkeypatch.setattr("opentelemetry.sdk.resources.dumps", dumps)
    handle = setup_telemetry(NemoLensConfig(enabled=True, run_id="r", metrics_enabled=False))
    try:
        provider: Any = handle.tracer_provider
        resource = provider.resource
        plain = Resource(resource.attributes, resource.schema_url)
        calls.clear()
        assert [hash(resource) for _ in range(3)] == [hash(plain)] * 3
        assert len(calls) == 2  # one for the job's resource, one for the plain one
        assert resource == plain and plain == resource
        assert resource.merge(Resource({"x": 1})).attributes["x"] == 1
    finally:
        handle.shutdown()


def test_set_up_picks_the_otlp_transport_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/protobuf")
    cfg = NemoLensConfig(enabled=True, exporter="otlp", metrics_enabled=False)
    handle = setup_telemetry(cfg)
    assert isinstance(handle._pipeline.span_exporter, HttpSpanExporter)  # type: ignore[union-attr]
    processors = handle._pipeline.tracer_provider._active_span_processor._span_processors  # type: ignore[union-attr]
    (batch,) = [p for p in processors if isinstance(p, BatchingSpanProcessor)]
    assert batch.max_queue_size == OTLP_MAX_QUEUE_SIZE


def test_unsupported_otlp_protocol_fails_before_set_up(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "http/protobuff")
    cfg = NemoLensConfig(enabled=True, exporter="otlp")
    with pytest.raises(ValueError) as info:
        setup_telemetry(cfg)
    assert "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL='http/protobuff' is not supported" in str(
        info.value
    )
    assert "grpc, http/protobuf" in str(info.value)
    assert isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)


def test_http_json_picks_the_http_exporter_as_upstream_does_and_says_so_once(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # The Python exporters implement no JSON: upstream sends protobuf over HTTP for it.
    monkeypatch.setattr(destinations, "_warned_json", set())
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")
    assert isinstance(create_exporter("traces", "otlp"), HttpSpanExporter)
    assert isinstance(create_exporter("metrics", "otlp"), HttpMetricExporter)
    assert isinstance(create_exporter("metrics", "otlp"), HttpMetricExporter)
    warnings = [r.getMessage() for r in caplog.records if "implement no JSON" in r.getMessage()]
    assert warnings == [
        "nemo.lens: OTEL_EXPORTER_OTLP_PROTOCOL=http/json: the Python OTLP exporters implement "
        "no JSON, so the HTTP exporter sends protobuf; set http/protobuf to silence this"
    ]
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "grpc")
    assert isinstance(create_exporter("traces", "otlp"), GrpcSpanExporter)


def test_an_unknown_exporter_name_carries_upstreams_phrase_wherever_it_is_caught() -> None:
    with pytest.raises(ValueError, match="Unknown exporter type: 'jaeger'") as info:
        create_exporter("traces", "jaeger")
    assert str(info.value).startswith("unknown exporter 'jaeger' (Unknown exporter")
    assert "use one of: otlp, console, file, none" in str(info.value)


# -- replacement and none --------------------------------------------------------------------------


def test_passed_span_exporter_replaces_only_traces(tmp_path: Path) -> None:
    trace_file = tmp_path / "run.jsonl"
    memory = InMemorySpanExporter()
    cfg = NemoLensConfig(enabled=True, exporter="file", trace_file=str(trace_file))
    handle = setup_telemetry(cfg, span_exporter=memory)
    handle.tracer.start_span("to-memory").end()
    handle.meter.create_counter("still-to-file").add(1)
    handle.shutdown()

    assert [s.name for s in memory.get_finished_spans()] == ["to-memory"]
    assert not trace_file.exists()
    assert '"still-to-file"' in (tmp_path / "run.metrics.jsonl").read_text()


def test_passed_metric_reader_replaces_only_metrics(capsys: pytest.CaptureFixture[str]) -> None:
    reader = InMemoryMetricReader()
    cfg = NemoLensConfig(enabled=True, exporter="console", run_id="m")
    handle = setup_telemetry(cfg, metric_reader=reader)
    handle.meter.create_histogram("step_time", unit="s").record(0.5)
    handle.tracer.start_span("to-console").end()

    data = reader.get_metrics_data()
    assert data is not None
    (resource_metrics,) = data.resource_metrics
    assert resource_metrics.resource.attributes["service.instance.id"] == "m-rank0"
    names = [m.name for sm in resource_metrics.scope_metrics for m in sm.metrics]
    assert names == ["step_time"]
    (line,) = capsys.readouterr().out.splitlines()
    assert _strict_json(line)["name"] == "to-console"


def test_exporter_none_exports_nothing_but_spans_are_real(
    capsys: pytest.CaptureFixture[str],
) -> None:
    handle = setup_telemetry(NemoLensConfig(enabled=True, exporter="none"))
    assert handle.is_exporting is False
    with handle.tracer.start_as_current_span("quiet") as span:
        assert span.get_span_context().is_valid
    handle.shutdown()
    assert capsys.readouterr().out == ""
