"""The resource every signal carries holds upstream nemo-lens 0.2.0's keys, with its types.

Dashboards and alerts written against upstream query these keys; a key renamed, missing
or retyped (``slurm.ntasks`` an int where upstream sends the variable's text) is data
that silently stops arriving. The keys and types expected are the catalogue's
(``upstream_resource`` marks upstream's), compared key by key with what each exporter
actually delivers: the ``file`` and ``console`` lines, OTLP over HTTP and gRPC as a
receiver gets it, a ``span_exporter=``, and the metrics and logs signals. nemo.lens's
own keys are sent beside upstream's, with the catalogue's types too.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from nemo.lens import managed_span
from nemo.lens.config import NemoLensConfig
from nemo.lens.handle import TelemetryHandle, setup_telemetry
from nemo.lens.logging_bridge import setup_logging_bridge
from tests.catalogue import resource_types, upstream_resource
from tests.trace_file import spans_in

pytestmark = pytest.mark.usefixtures("unset_providers")

# A job on a SLURM cluster, in a Kubernetes pod, as its launchers describe it.
_JOB_ENV = {
    "SLURM_JOB_ID": "4242",
    "SLURM_JOB_NAME": "pretrain",
    "SLURM_NODELIST": "node[01-02]",
    "SLURM_NNODES": "2",
    "SLURM_NTASKS": "16",
    "SLURM_PARTITION": "batch",
    "SLURM_CLUSTER_NAME": "eos",
    "SLURM_PROCID": "13",
    "SLURM_NODEID": "1",
    "SLURM_LOCALID": "5",
    "SLURM_JOB_NUM_NODES": "2",
    "SLURM_STEP_ID": "0",
    "SLURM_ARRAY_JOB_ID": "4240",
    "SLURM_ARRAY_TASK_ID": "2",
    "KUBERNETES_SERVICE_HOST": "10.0.0.1",
    "K8S_NAMESPACE": "research",
    "K8S_POD_NAME": "trainer-3",
    "K8S_POD_UID": "0f6e-77",
    "K8S_NODE_NAME": "gpu-node-7",
    "K8S_CONTAINER_NAME": "trainer",
    "K8S_JOB_NAME": "pretrain-job",
    "DEPLOYMENT_ENV": "staging",
    "CUDA_VISIBLE_DEVICES": "0,1",
    "LOCAL_RANK": "5",
}
_LOGGER = "tests.resource_contract"


@pytest.fixture(autouse=True)
def _job_env(clean_env: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    # After clean_env, which removes whatever the machine running the tests has set.
    for name, value in _JOB_ENV.items():
        monkeypatch.setenv(name, value)
    yield
    for handler in list(logging.getLogger(_LOGGER).handlers):
        logging.getLogger(_LOGGER).removeHandler(handler)


def _config(**overrides: Any) -> NemoLensConfig:
    fields: dict[str, Any] = {
        "enabled": True,
        "span_groups": "all",
        "metrics_enabled": False,
        "run_id": "run7",
        "user": "ada",
        "wandb_entity": "lab",
        "wandb_project": "rl",
        # Rank 3 of 16 exports (the default exports the last rank only).
        "export_strategy": "all_ranks",
        **overrides,
    }
    return NemoLensConfig(**fields)


def _emit(handle: TelemetryHandle) -> None:
    """One span, one metric point and one log record, then shutdown (which exports them)."""
    try:
        setup_logging_bridge(_LOGGER)
        with managed_span("step", "train.step"):
            logging.getLogger(_LOGGER).warning("a record")
        handle.meter.create_counter("contract.points").add(1)
    finally:
        handle.shutdown()


def _check(resource: Mapping[str, Any], where: str) -> None:
    sent = {key: type(value) for key, value in resource.items()}
    upstream = upstream_resource()
    assert upstream, "the catalogue marks no key upstream sends"
    assert {key: sent.get(key) for key in upstream} == upstream, where
    # nemo.lens's own keys are all there too (every variable they come from is set), and
    # none of them is retyped either.
    ours = resource_types()
    assert {key: sent.get(key) for key in ours} == ours, where
    # Upstream's SLURM keys hold exactly what their variables hold.
    for key in upstream:
        if key.startswith("slurm."):
            assert resource[key] == _JOB_ENV[key.upper().replace(".", "_")], (where, key)


def _line_resource(record: Mapping[str, Any]) -> Mapping[str, Any]:
    """The resource's attributes of a JSON line: the line's ``resource`` object, or its
    ``attributes`` where the line is the SDK's own ``to_json`` (beside ``schema_url``)."""
    resource = record["resource"]
    inner = resource.get("attributes")
    if isinstance(inner, Mapping) and "schema_url" in resource:
        return inner
    assert isinstance(resource, Mapping)
    return resource


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_a_span_exporter_and_a_metric_reader_get_upstreams_resource() -> None:
    spans, reader = InMemorySpanExporter(), InMemoryMetricReader()
    handle = setup_telemetry(
        _config(exporter="none", metrics_enabled=True),
        rank=3,
        world_size=16,
        span_exporter=spans,
        metric_reader=reader,
    )
    try:
        with managed_span("step", "train.step"):
            pass
        handle.meter.create_counter("contract.points").add(1)
        data = reader.get_metrics_data()
    finally:
        handle.shutdown()
    (span,) = spans.get_finished_spans()
    _check(span.resource.attributes, "span_exporter=")
    assert data is not None
    (metrics,) = data.resource_metrics
    _check(metrics.resource.attributes, "metric_reader=")
    assert span.resource.attributes["dl.rank"] == 3


def test_the_file_exporter_writes_upstreams_resource_on_every_signal(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    config = _config(exporter="file", trace_file=str(path), metrics_enabled=True, logs_enabled=True)
    _emit(setup_telemetry(config, rank=3, world_size=16))
    (span,) = spans_in(path)  # its resource from its lifetime's header
    _check(_line_resource(span), "file: spans")
    (log,) = _lines(path.with_name("trace.logs.jsonl"))
    _check(_line_resource(log), "file: logs")
    metric_lines = _lines(path.with_name("trace.metrics.jsonl"))
    assert metric_lines
    for line in metric_lines:
        for metrics in line["resource_metrics"]:
            _check(_line_resource(metrics), "file: metrics")


def test_the_console_exporter_prints_upstreams_resource(
    capsys: pytest.CaptureFixture[str],
) -> None:
    capsys.readouterr()
    _emit(setup_telemetry(_config(exporter="console"), rank=3, world_size=16))
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line]
    spans = [r for r in records if r.get("name") == "train.step"]
    assert len(spans) == 1
    _check(_line_resource(spans[0]), "console")


def _any_value(value: Any) -> Any:
    """An OTLP ``AnyValue`` as the Python value it carries (its type kept)."""
    return getattr(value, value.WhichOneof("value"))


def _otlp_resources(requests: list[Any], field: str) -> list[dict[str, Any]]:
    return [
        {pair.key: _any_value(pair.value) for pair in group.resource.attributes}
        for request in requests
        for group in getattr(request, field)
    ]


def _http_requests(receiver: Any, path: str, parse: Callable[[bytes], Any]) -> list[Any]:
    return [parse(r.body) for r in receiver.requests if r.path == path]


def test_otlp_over_http_sends_upstreams_resource_on_every_signal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
    from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
        ExportMetricsServiceRequest,
    )
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    from tests.reliability.conftest import OtlpReceiver

    receiver = OtlpReceiver()
    try:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint)
        config = _config(exporter="otlp", metrics_enabled=True, logs_enabled=True)
        _emit(setup_telemetry(config, rank=3, world_size=16))
    finally:
        receiver.close()
    for path, parse, field in (
        ("/v1/traces", ExportTraceServiceRequest.FromString, "resource_spans"),
        ("/v1/metrics", ExportMetricsServiceRequest.FromString, "resource_metrics"),
        ("/v1/logs", ExportLogsServiceRequest.FromString, "resource_logs"),
    ):
        resources = _otlp_resources(_http_requests(receiver, path, parse), field)
        assert resources, f"nothing arrived on {path}"
        for resource in resources:
            _check(resource, f"OTLP/HTTP {path}")


def test_otlp_over_grpc_sends_upstreams_resource(monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.reliability.conftest import GrpcReceiver

    receiver = GrpcReceiver()
    try:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint)
        _emit(setup_telemetry(_config(exporter="otlp"), rank=3, world_size=16))
    finally:
        receiver.close()
    resources = _otlp_resources(list(receiver.requests), "resource_spans")
    assert resources, "no span arrived"
    for resource in resources:
        _check(resource, "OTLP/gRPC")
