"""Export to a real OTLP backend, Arize Phoenix, over gRPC and over HTTP/protobuf.

Each test sets telemetry up the way a job owner would: ``NemoLensConfig`` with the
``otlp`` exporter, the endpoint and transport in the standard
``OTEL_EXPORTER_OTLP_*`` variables, and ``openinference.project.name`` on the
resource (Phoenix files spans under that project). It runs a small instrumented
"training job", shuts telemetry down to flush, and reads the trace back through
Phoenix's REST API (``GET /v1/projects/{project}/spans``).

gRPC and HTTP listen on different ports, so a transport variable that nemo.lens
ignored would send the spans to the wrong listener and nothing would arrive.

Phoenix drops span kind, links, the instrumentation scope and resource attributes
other than the project; those are covered by the in-memory and file-exporter
tests in ``tests/runtime``.
"""

from __future__ import annotations

import collections
import ipaddress
import os
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from opentelemetry.trace import format_trace_id

from nemo.lens import NemoLensConfig, managed_span, setup_telemetry, trace_fn
from nemo.lens.groups import SpanGroup
from tests.integration.phoenix_launcher import loopback_address
from tests.trace_file import spans_in

if TYPE_CHECKING:
    from tests.integration.conftest import PhoenixServer

PROJECT_ATTRIBUTE = "openinference.project.name"
# Groups on for the job below: forward_backward stays off, so its spans must not arrive.
SPAN_GROUPS = "default,step,optimizer"
ITERATIONS = 2
# Everything `run_job` emits with SPAN_GROUPS enabled.
EXPECTED_NAMES = {
    "train.job": 1,
    "train.step": ITERATIONS,
    "train.optimizer_step": ITERATIONS,
    "train.checkpoint": 1,
}
SHUTDOWN_TIMEOUT_MS = 10_000


class CheckpointError(RuntimeError):
    """Raised by the fake checkpoint save, to be recorded on its span."""


@trace_fn(SpanGroup.OPTIMIZER, "train.optimizer_step")
def optimizer_step(learning_rate: float) -> float:
    return learning_rate / 2


def run_job() -> str:
    """Run a miniature instrumented training job; return its trace id (32 hex digits)."""
    with managed_span(
        SpanGroup.JOB,
        "train.job",
        iterations=ITERATIONS,
        model="gpt-tiny",
        prompt="the system prompt, which must never leave the process",
        prompt_tokens=12,
        tags=["smoke", "ci"],
    ) as job:
        assert job is not None
        learning_rate = 0.1
        for iteration in range(ITERATIONS):
            with managed_span(SpanGroup.STEP, "train.step", iteration=iteration) as step:
                assert step is not None
                with managed_span(SpanGroup.FORWARD_BACKWARD, "train.forward_backward") as fb:
                    assert fb is None  # the group is off: no span, no export
                learning_rate = optimizer_step(learning_rate)
                step.set_attribute("loss", 1.0 / (iteration + 1))
                step.set_attribute("converged", iteration == ITERATIONS - 1)
        with (
            pytest.raises(CheckpointError, match="disk full"),
            managed_span(SpanGroup.CHECKPOINT, "train.checkpoint", path="ckpt/iter_2"),
        ):
            raise CheckpointError("disk full")
        return format_trace_id(job.get_span_context().trace_id)


@pytest.fixture
def otel_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    """Start each test from no OTEL_* settings, and keep proxies away from loopback."""
    for key in list(os.environ):
        if key.startswith("OTEL_"):
            monkeypatch.delenv(key)
    # gRPC and requests both honour *_proxy variables; the collector is local.
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    yield monkeypatch


def point_at(env: pytest.MonkeyPatch, phoenix: PhoenixServer, protocol: str, variable: str) -> None:
    """Set the endpoint *variable* and OTEL_EXPORTER_OTLP_PROTOCOL for *protocol*.

    The generic ``OTEL_EXPORTER_OTLP_ENDPOINT`` is the base URL (the HTTP
    exporter appends ``/v1/traces``); the per-signal one is the full URL. gRPC
    takes ``scheme://host:port`` either way.
    """
    env.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", protocol)
    if protocol == "grpc":
        endpoint = phoenix.grpc_url
    elif variable == "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT":
        endpoint = f"{phoenix.http_url}/v1/traces"
    else:
        endpoint = phoenix.http_url
    env.setenv(variable, endpoint)


def otlp_config() -> NemoLensConfig:
    # Phoenix takes traces only; metrics pointed at it would fail every export.
    return NemoLensConfig(
        enabled=True,
        exporter="otlp",
        span_groups=SPAN_GROUPS,
        metrics_enabled=False,
        service_name="nemo-lens-integration",
    )


def by_name(spans: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    grouped: dict[str, list[dict[str, Any]]] = collections.defaultdict(list)
    for span in spans:
        grouped[span["name"]].append(span)
    return grouped


def span_id(span: dict[str, Any]) -> str:
    return str(span["context"]["span_id"])


def interval(span: dict[str, Any]) -> tuple[datetime, datetime]:
    return datetime.fromisoformat(span["start_time"]), datetime.fromisoformat(span["end_time"])


@pytest.mark.parametrize(
    ("protocol", "endpoint_variable"),
    [
        pytest.param("grpc", "OTEL_EXPORTER_OTLP_ENDPOINT", id="grpc"),
        pytest.param("grpc", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", id="grpc-traces-endpoint"),
        pytest.param("http/protobuf", "OTEL_EXPORTER_OTLP_ENDPOINT", id="http"),
        pytest.param(
            "http/protobuf", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", id="http-traces-endpoint"
        ),
    ],
)
def test_trace_round_trips_through_phoenix(
    phoenix: PhoenixServer,
    project: str,
    otel_env: pytest.MonkeyPatch,
    protocol: str,
    endpoint_variable: str,
) -> None:
    point_at(otel_env, phoenix, protocol, endpoint_variable)
    handle = setup_telemetry(otlp_config(), resource_attributes={PROJECT_ATTRIBUTE: project})
    assert handle.is_exporting
    trace_id = run_job()
    assert handle.shutdown(timeout_ms=SHUTDOWN_TIMEOUT_MS), "the exporter did not flush"

    spans = phoenix.wait_for_spans(project, trace_id, count=sum(EXPECTED_NAMES.values()))
    assert collections.Counter(span["name"] for span in spans) == EXPECTED_NAMES
    assert {span["context"]["trace_id"] for span in spans} == {trace_id}
    named = by_name(spans)

    (job,) = named["train.job"]
    assert job["parent_id"] is None
    assert job["status_code"] == "UNSET"
    assert job["events"] == []
    attributes = job["attributes"]
    assert attributes["iterations"] == ITERATIONS
    assert attributes["model"] == "gpt-tiny"
    assert attributes["prompt"] == "[REDACTED]"
    assert attributes["prompt_tokens"] == 12  # not a redact key: only "prompt" is
    assert attributes["tags"] == ["smoke", "ci"]
    assert "the system prompt" not in repr(spans)

    steps = sorted(named["train.step"], key=lambda span: span["attributes"]["iteration"])
    assert [step["attributes"]["iteration"] for step in steps] == list(range(ITERATIONS))
    assert [step["attributes"]["loss"] for step in steps] == [1.0, 0.5]
    assert [step["attributes"]["converged"] for step in steps] == [False, True]
    job_start, job_end = interval(job)
    for step in steps:
        assert step["parent_id"] == span_id(job)
        assert step["status_code"] == "UNSET"
        start, end = interval(step)
        assert job_start <= start <= end <= job_end

    # trace_fn spans nest under the span current at the call: one per step.
    optimizer_parents = sorted(span["parent_id"] for span in named["train.optimizer_step"])
    assert optimizer_parents == sorted(span_id(step) for step in steps)

    (checkpoint,) = named["train.checkpoint"]
    assert checkpoint["parent_id"] == span_id(job)
    assert checkpoint["attributes"]["path"] == "ckpt/iter_2"
    assert checkpoint["status_code"] == "ERROR"
    assert checkpoint["status_message"] == "CheckpointError: disk full"
    (event,) = checkpoint["events"]
    assert event["name"] == "exception"
    assert event["attributes"]["exception.type"] == f"{__name__}.CheckpointError"
    assert event["attributes"]["exception.message"] == "disk full"
    assert 'raise CheckpointError("disk full")' in event["attributes"]["exception.stacktrace"]


def test_reinit_flushes_the_old_setup_and_switches_transport(
    phoenix: PhoenixServer, project: str, otel_env: pytest.MonkeyPatch
) -> None:
    """Replacing an active set-up exports what the old one held, then uses the new settings."""
    point_at(otel_env, phoenix, "grpc", "OTEL_EXPORTER_OTLP_ENDPOINT")
    setup_telemetry(otlp_config(), resource_attributes={PROJECT_ATTRIBUTE: f"{project}-grpc"})
    with managed_span(SpanGroup.JOB, "phase.grpc") as first:
        assert first is not None
    # No shutdown: the batch processor still holds the span when set-up is replaced.

    point_at(otel_env, phoenix, "http/protobuf", "OTEL_EXPORTER_OTLP_ENDPOINT")
    handle = setup_telemetry(
        otlp_config(),
        resource_attributes={PROJECT_ATTRIBUTE: f"{project}-http"},
        _allow_reinit=True,
    )
    with managed_span(SpanGroup.JOB, "phase.http") as second:
        assert second is not None
    assert handle.shutdown(timeout_ms=SHUTDOWN_TIMEOUT_MS), "the exporter did not flush"

    for suffix, span in (("grpc", first), ("http", second)):
        trace_id = format_trace_id(span.get_span_context().trace_id)
        (stored,) = phoenix.wait_for_spans(f"{project}-{suffix}", trace_id, count=1)
        assert stored["name"] == f"phase.{suffix}"


def test_a_backend_processor_added_to_the_global_provider_gets_the_job(
    phoenix: PhoenixServer, project: str, otel_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """What a backend's ``register()`` helper does: add its own exporting processor to
    OpenTelemetry's global provider, here beside nemo.lens's own ``file`` exporter."""
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    path = tmp_path / "trace.jsonl"
    config = NemoLensConfig(
        enabled=True,
        exporter="file",
        trace_file=str(path),
        span_groups=SPAN_GROUPS,
        metrics_enabled=False,
    )
    handle = setup_telemetry(config, resource_attributes={PROJECT_ATTRIBUTE: project})
    provider = trace.get_tracer_provider()
    assert isinstance(provider, TracerProvider)
    provider.add_span_processor(
        BatchSpanProcessor(OTLPSpanExporter(endpoint=f"{phoenix.http_url}/v1/traces"))
    )
    trace_id = run_job()
    assert handle.shutdown(timeout_ms=SHUTDOWN_TIMEOUT_MS)

    spans = phoenix.wait_for_spans(project, trace_id, count=sum(EXPECTED_NAMES.values()))
    assert collections.Counter(span["name"] for span in spans) == EXPECTED_NAMES
    assert len(spans_in(path)) == sum(EXPECTED_NAMES.values())


def _listening_addresses(port: int) -> list[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    """The local addresses of the TCP sockets listening on *port* (Linux ``/proc/net``)."""
    found: list[ipaddress.IPv4Address | ipaddress.IPv6Address] = []
    for table in ("tcp", "tcp6"):
        path = Path("/proc/net") / table
        if not path.exists():
            continue
        for line in path.read_text().splitlines()[1:]:
            fields = line.split()
            local, state = fields[1], fields[3]
            address_hex, port_hex = local.split(":")
            if state != "0A" or int(port_hex, 16) != port:  # 0A is TCP_LISTEN
                continue
            # The kernel prints each 32-bit word of the address in host (little-endian) order.
            raw = bytes.fromhex(address_hex)
            words = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
            found.append(ipaddress.ip_address(words))
    return found


@pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="needs Linux /proc/net")
def test_phoenix_listens_on_loopback_only(phoenix: PhoenixServer) -> None:
    """The launcher's promise: neither Phoenix listener is reachable from the network."""
    for port in (phoenix.http_port, phoenix.grpc_port):
        addresses = _listening_addresses(port)
        assert addresses, f"nothing listens on port {port}"
        for address in addresses:
            mapped = getattr(address, "ipv4_mapped", None)
            assert address.is_loopback or (mapped is not None and mapped.is_loopback), (
                f"port {port} listens on {address}"
            )


@pytest.mark.parametrize(
    ("address", "expected"),
    [
        ("[::]:4317", "127.0.0.1:4317"),
        ("0.0.0.0:4317", "127.0.0.1:4317"),
        (":4317", "127.0.0.1:4317"),
        ("127.0.0.1:4317", "127.0.0.1:4317"),
        ("[::1]:4317", "[::1]:4317"),
        ("localhost:4317", "localhost:4317"),
    ],
)
def test_launcher_moves_wildcard_binds_to_loopback(address: str, expected: str) -> None:
    assert loopback_address(address) == expected


@pytest.mark.parametrize("address", ["10.0.0.5:4317", "[2001:db8::1]:4317", "example:4317", "4317"])
def test_launcher_refuses_non_loopback_binds(address: str) -> None:
    with pytest.raises(ValueError, match="refusing gRPC bind address"):
        loopback_address(address)
