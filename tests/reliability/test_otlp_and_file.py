"""Two exporters at once: ``NEMO_LENS_EXPORTER=otlp,file``.

OTLP cannot be crash-safe the way the file is (what a SIGKILL takes is whatever
its queue held), so jobs that need crash forensics write the file beside it.
What a user must see: every span, metric and log record in both places, the
spans under the same ids; and a destination that fails costs the other
nothing, each one's losses counted and named on their own.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests.reliability.conftest import GrpcReceiver, OtlpReceiver, read_spans, run_job

_JOB = """
import logging
from nemo.lens import NemoLensConfig, managed_span, setup_telemetry
from nemo.lens.logging_bridge import setup_logging_bridge

handle = setup_telemetry(NemoLensConfig.from_env())
setup_logging_bridge()
logging.getLogger("job").setLevel(logging.INFO)
steps = handle.meter.create_counter("test.steps")
with managed_span("job", "run"):
    for i in range(int(sys.argv[1])):
        with managed_span("step", "train.step", i=i):
            steps.add(1)
    logging.getLogger("job").info("run done")
report(finished=handle.shutdown(int(sys.argv[2])), undelivered=dict(handle.undelivered))
"""


def _env(trace_file: Path, endpoint: str, protocol: str, **more: str) -> dict[str, str]:
    return {
        "NEMO_LENS_ENABLED": "1",
        "NEMO_LENS_EXPORTER": "otlp,file",
        "NEMO_LENS_TRACE_FILE": str(trace_file),
        "NEMO_LENS_SPAN_GROUPS": "all",
        "OTEL_EXPORTER_OTLP_PROTOCOL": protocol,
        "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
        **more,
    }


def _file_spans(path: Path) -> set[tuple[str, str, str, str | None]]:
    return {
        (span["name"], span["trace_id"], span["span_id"], span["parent_span_id"])
        for span in read_spans(path)
    }


def _received_spans(spans: list[Any]) -> set[tuple[str, str, str, str | None]]:
    return {
        (span.name, span.trace_id.hex(), span.span_id.hex(), span.parent_span_id.hex() or None)
        for span in spans
    }


def _walk(value: Any) -> Iterator[Any]:
    yield value
    children = (
        value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    )
    for child in children:
        yield from _walk(child)


def _file_metric(path: Path, name: str) -> list[float]:
    # The SDK's to_json of each metrics export: every data point of metric *name*.
    values = []
    for line in path.read_text().splitlines():
        for node in _walk(json.loads(line)):
            if isinstance(node, dict) and node.get("name") == name:
                values += [point["value"] for point in node["data"]["data_points"]]
    return values


def _received(receiver: OtlpReceiver, path: str, message: Any) -> list[Any]:
    return [message.FromString(r.body) for r in receiver.requests if r.path == path]


def test_every_span_metric_and_log_reaches_both_over_http(
    tmp_path: Path, otlp_receiver: OtlpReceiver
) -> None:
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
    from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
        ExportMetricsServiceRequest,
    )

    path = tmp_path / "spans.jsonl"
    env = _env(path, otlp_receiver.endpoint, "http/protobuf", NEMO_LENS_LOGS_ENABLED="1")
    job = run_job(_JOB, "300", "5000", env=env)

    assert job.returncode == 0, job.stderr
    assert job.result == {"finished": True, "undelivered": {}}
    assert job.stderr == ""
    in_file = _file_spans(path)
    assert len(in_file) == 301
    assert _received_spans(otlp_receiver.spans()) == in_file

    assert _file_metric(tmp_path / "spans.metrics.jsonl", "test.steps") == [300]
    received = [
        point.as_int
        for request in _received(otlp_receiver, "/v1/metrics", ExportMetricsServiceRequest)
        for resource in request.resource_metrics
        for scope in resource.scope_metrics
        for metric in scope.metrics
        if metric.name == "test.steps"
        for point in metric.sum.data_points
    ]
    assert received == [300]

    (run,) = [span for span in in_file if span[0] == "run"]
    (logged,) = [
        json.loads(line) for line in (tmp_path / "spans.logs.jsonl").read_text().split("\n") if line
    ]
    assert logged["body"] == "run done" and logged["trace_id"] == "0x" + run[1]
    (record,) = [
        record
        for request in _received(otlp_receiver, "/v1/logs", ExportLogsServiceRequest)
        for resource in request.resource_logs
        for scope in resource.scope_logs
        for record in scope.log_records
    ]
    assert record.body.string_value == "run done" and record.trace_id.hex() == run[1]


def test_every_span_reaches_both_over_grpc(tmp_path: Path, grpc_receiver: GrpcReceiver) -> None:
    path = tmp_path / "spans.jsonl"
    env = _env(path, grpc_receiver.endpoint, "grpc", NEMO_LENS_METRICS_ENABLED="0")
    job = run_job(_JOB, "300", "5000", env=env)

    assert job.returncode == 0, job.stderr
    assert job.result == {"finished": True, "undelivered": {}}
    in_file = _file_spans(path)
    assert len(in_file) == 301
    assert _received_spans(grpc_receiver.spans()) == in_file


def test_with_the_collector_down_the_file_still_gets_every_span(
    tmp_path: Path, dead_endpoint: str
) -> None:
    path = tmp_path / "spans.jsonl"
    env = _env(path, dead_endpoint, "http/protobuf", NEMO_LENS_METRICS_ENABLED="0")
    job = run_job(_JOB, "2000", "1500", env=env)

    assert job.returncode == 0, job.stderr
    assert job.result["finished"] is False
    assert len(_file_spans(path)) == 2001
    # The collector's outage is said once and totalled, every span of it; the file is
    # named nowhere.
    destination = f"{dead_endpoint}/v1/traces"
    (warning,) = job.stderr_lines("cannot export traces to")
    assert destination in warning
    assert len(job.stderr_lines("shutdown did not finish within 1500 ms")) == 1
    (summary,) = job.stderr_lines("could not deliver")
    lost = re.findall(
        r"(\d+) span\(s\) (?:failed to export to|still queued for) ([^;\s]+)", summary
    )
    assert {where for _, where in lost} == {destination}
    assert sum(int(count) for count, _ in lost) == 2001
    assert str(path) not in job.stderr
    assert len(job.stderr.splitlines()) == 3, job.stderr


def test_with_the_file_failing_the_collector_still_gets_every_span(
    otlp_receiver: OtlpReceiver,
) -> None:
    env = _env(
        Path("/dev/full"),  # every write: ENOSPC
        otlp_receiver.endpoint,
        "http/protobuf",
        NEMO_LENS_METRICS_ENABLED="0",
    )
    job = run_job(_JOB, "49", "5000", env=env)

    assert job.returncode == 0, job.stderr
    assert job.result == {"finished": False, "undelivered": {"traces": 50}}
    assert len(otlp_receiver.spans()) == 50
    (warning,) = job.stderr_lines("cannot export traces to /dev/full")
    assert "No space left on device" in warning
    (summary,) = job.stderr_lines("could not deliver")
    assert summary.endswith(": 50 span(s) failed to export to /dev/full")
    assert len(job.stderr.splitlines()) == 2, job.stderr
