"""Every call nemo.lens makes into an exporter runs with instrumentation suppressed.

The SDK's processors export inside ``attach(set_value(_SUPPRESS_INSTRUMENTATION_KEY,
True))`` so that HTTP client instrumentation leaves the exporter's own requests alone;
nemo.lens's do too, on every path: each exporter of set-up, the batch thread, a
synchronous export, the open-span records, metric and log exports, flush and shutdown.
Each exporter here notes whether instrumentation was suppressed when it was called.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import context, metrics
from opentelemetry.context import _SUPPRESS_INSTRUMENTATION_KEY
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from nemo.lens import NemoLensConfig, managed_span, setup_telemetry
from nemo.lens._sdk.batching import BatchingSpanProcessor
from nemo.lens.logging_bridge import setup_logging_bridge

pytestmark = pytest.mark.usefixtures("clean_env", "unset_providers")

Calls = list[tuple[str, object]]


def _noting(calls: Calls, name: str, result: Any = None) -> Any:
    def call(*args: Any, **kwargs: Any) -> Any:
        calls.append((name, context.get_value(_SUPPRESS_INSTRUMENTATION_KEY)))
        return result

    return call


@pytest.fixture
def calls() -> Calls:
    return []


def _all_suppressed(calls: Calls) -> bool:
    return bool(calls) and all(suppressed is True for _, suppressed in calls)


_EXPORTERS = {
    # exporter: the classes whose calls are noted (span, metric, log)
    "file": (
        "nemo.lens._sdk.exporters.trace_file.TraceFileSpanExporter.export_lines",
        "nemo.lens._sdk.exporters.jsonl.JsonLinesMetricExporter.export",
        "nemo.lens._sdk.exporters.jsonl.JsonLinesLogExporter.export",
    ),
    "console": (
        "nemo.lens._sdk.exporters.jsonl.SdkJsonSpanExporter.export",
        "nemo.lens._sdk.exporters.jsonl.JsonLinesMetricExporter.export",
        "nemo.lens._sdk.exporters.jsonl.JsonLinesLogExporter.export",
    ),
    "http/protobuf": (
        "opentelemetry.exporter.otlp.proto.http.trace_exporter.OTLPSpanExporter.export",
        "opentelemetry.exporter.otlp.proto.http.metric_exporter.OTLPMetricExporter.export",
        "opentelemetry.exporter.otlp.proto.http._log_exporter.OTLPLogExporter.export",
    ),
    "grpc": (
        "opentelemetry.exporter.otlp.proto.grpc.trace_exporter.OTLPSpanExporter.export",
        "opentelemetry.exporter.otlp.proto.grpc.metric_exporter.OTLPMetricExporter.export",
        "opentelemetry.exporter.otlp.proto.grpc._log_exporter.OTLPLogExporter.export",
    ),
}


@pytest.mark.parametrize("exporter", list(_EXPORTERS))
def test_every_export_of_set_up_is_suppressed(
    exporter: str, calls: Calls, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from opentelemetry.sdk._logs.export import LogRecordExportResult
    from opentelemetry.sdk.metrics.export import MetricExportResult

    results = (SpanExportResult.SUCCESS, MetricExportResult.SUCCESS, LogRecordExportResult.SUCCESS)
    for target, result in zip(_EXPORTERS[exporter], results, strict=True):
        monkeypatch.setattr(target, _noting(calls, target.rsplit(".", 2)[-2], result))
        owner = target.rsplit(".", 1)[0]
        for method in ("force_flush", "shutdown"):
            monkeypatch.setattr(f"{owner}.{method}", _noting(calls, method, True))
    if exporter in ("grpc", "http/protobuf"):
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", exporter)
    config = NemoLensConfig(
        enabled=True,
        exporter="otlp" if exporter in ("grpc", "http/protobuf") else exporter,
        trace_file=str(tmp_path / "spans.jsonl"),
        span_groups="all",
        logs_enabled=True,
        run_id="r",
    )
    handle = setup_telemetry(config)
    logger = logging.getLogger("test.suppressed")
    setup_logging_bridge(logger.name)
    with managed_span("step", "train.step", i=1):
        metrics.get_meter("test").create_counter("steps").add(1)
        logger.warning("a record")
    handle.force_flush()
    with managed_span("step", "train.step", i=2):
        pass
    handle.shutdown()
    names = {name for name, _ in calls}
    assert {"shutdown"} < names and len(names) >= 3, names
    assert _all_suppressed(calls), calls


class _Noting(SpanExporter):
    def __init__(self, calls: Calls) -> None:
        self.export = _noting(calls, "export", SpanExportResult.SUCCESS)  # type: ignore[method-assign]
        self.export_open = _noting(calls, "export_open", SpanExportResult.SUCCESS)
        self.force_flush = _noting(calls, "force_flush", True)  # type: ignore[method-assign]
        self.shutdown = _noting(calls, "shutdown")  # type: ignore[method-assign]


@pytest.mark.parametrize("synchronous", [False, True], ids=["batch-thread", "synchronous"])
def test_the_batch_processor_exports_suppressed_on_every_path(
    synchronous: bool, calls: Calls
) -> None:
    opened: list[list[ReadableSpan] | None] = []

    def open_records(now_ns: int, idle_s: float) -> list[ReadableSpan] | None:
        return opened.pop() if opened else None

    processor = BatchingSpanProcessor(
        _Noting(calls),
        max_queue_size=10,
        max_export_batch_size=5,
        schedule_delay_millis=10,
        synchronous=synchronous,
        open_records=open_records,
    )
    provider = TracerProvider()
    provider.add_span_processor(processor)
    span = provider.get_tracer("test").start_span("open")
    opened.append([span])  # type: ignore[list-item]
    span.end()
    assert processor.force_flush(5000)
    deadline = time.monotonic() + 5
    while opened and time.monotonic() < deadline:  # the export thread records it as it polls
        time.sleep(0.01)
    processor.close(5000)
    assert {"export", "export_open", "shutdown"} <= {name for name, _ in calls}
    assert _all_suppressed(calls), calls


def test_a_guarded_metric_and_log_exporter_export_suppressed(calls: Calls) -> None:
    from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader, MetricsData

    from nemo.lens._sdk.exporters.guard import LogGuard, MetricGuard
    from nemo.lens._sdk.exporters.health import ExportHealth

    logs = InMemoryLogRecordExporter()  # type: ignore[no-untyped-call]
    logs.export = _noting(calls, "log export")  # type: ignore[method-assign]
    log_guard = LogGuard(logs, ExportHealth())
    log_guard.export([])
    log_guard.force_flush()
    log_guard.shutdown()
    reader = InMemoryMetricReader()
    exporter: Any = type("Exporter", (), {})()
    exporter._preferred_temporality = reader._instrument_class_temporality
    exporter._preferred_aggregation = reader._instrument_class_aggregation
    exporter.export = _noting(calls, "metric export")
    exporter.force_flush = _noting(calls, "metric flush", True)
    exporter.shutdown = _noting(calls, "metric shutdown")
    metric_guard = MetricGuard(exporter, ExportHealth())
    metric_guard.export(MetricsData(resource_metrics=[]))
    metric_guard.force_flush()
    metric_guard.shutdown()
    assert [name for name, _ in calls] == [
        "log export",
        "metric export",
        "metric flush",
        "metric shutdown",
    ]
    assert _all_suppressed(calls), calls
