"""Secrets stay out: redact keys hold however a value got in, credentials never leave as data.

Two real jobs. One puts secrets on spans every way the API allows -- keyword
attributes, ``set_attribute`` on the span, event attributes, link attributes,
a raw tracer, list values -- and exports them to a file and over OTLP/HTTP to a
receiver on loopback: no secret may appear in either, while values under keys
that merely look similar stay. The other runs with credentials in every place a
job keeps them -- OTLP headers, tokens in the environment, a password in the
endpoint URL -- and checks that the receiver got the credential where it
belongs (the request header) and nowhere in the exported spans, metrics or
resources, nor in what nemo.lens logged.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.reliability.conftest import Job, OtlpReceiver, read_spans, run_job

_REDACT_JOB = """
from opentelemetry import trace
from opentelemetry.trace import Link
from nemo.lens import NemoLensConfig, managed_span, safe_set_span_attributes, setup_telemetry

handle = setup_telemetry(NemoLensConfig.from_env())
with managed_span("step", "train.step", prompt="SECRET-kwarg", prompt_tokens=12) as span:
    span.set_attribute("llm.prompt", "SECRET-set-attribute")
    span.set_attribute("cache_key", "visible-cache-key")
    span.add_event("reply", {"output_text": "SECRET-event", "tokens": 5})
    safe_set_span_attributes(span, {"password": "SECRET-helper"})
    linked = span.get_span_context()
with handle.tracer.start_as_current_span(
    "raw",
    attributes={"Token": "SECRET-raw", "text": ["SECRET-list", "SECRET-list-2"]},
    links=[Link(linked, {"secret": "SECRET-link"})],
) as raw:
    raw.add_event("tool", {"gen_ai.Input_Text": "SECRET-event-2"})
report(finished=handle.shutdown())
"""


def _everything(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def test_redact_keys_hold_for_span_event_and_link_attributes(
    tmp_path: Path, otlp_receiver: OtlpReceiver
) -> None:
    path = tmp_path / "spans.jsonl"
    file_job = run_job(
        _REDACT_JOB,
        env={
            "NEMO_LENS_ENABLED": "1",
            "NEMO_LENS_EXPORTER": "file",
            "NEMO_LENS_TRACE_FILE": str(path),
            "NEMO_LENS_SPAN_GROUPS": "all",
        },
    )
    assert file_job.returncode == 0, file_job.stderr
    otlp_job = run_job(
        _REDACT_JOB,
        env={
            "NEMO_LENS_ENABLED": "1",
            "NEMO_LENS_EXPORTER": "otlp",
            "NEMO_LENS_SPAN_GROUPS": "all",
            "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
            "OTEL_EXPORTER_OTLP_ENDPOINT": otlp_receiver.endpoint,
        },
    )
    assert otlp_job.returncode == 0, otlp_job.stderr
    assert otlp_job.result["finished"] is True

    assert "SECRET" not in path.read_text(encoding="utf-8")
    assert len(otlp_receiver.spans()) == 2
    for request in otlp_receiver.requests:
        assert b"SECRET" not in request.body

    spans = {span["name"]: span for span in read_spans(path)}
    step, raw = spans["train.step"], spans["raw"]
    assert step["attributes"]["prompt"] == "[REDACTED]"
    assert step["attributes"]["llm.prompt"] == "[REDACTED]"
    assert step["attributes"]["password"] == "[REDACTED]"
    assert step["events"][0]["attributes"] == {"output_text": "[REDACTED]", "tokens": 5}
    assert raw["attributes"]["text"] == ["[REDACTED]", "[REDACTED]"]
    assert raw["links"][0]["attributes"] == {"secret": "[REDACTED]"}
    # Keys that only look like redact keys keep their values.
    assert step["attributes"]["prompt_tokens"] == 12
    assert step["attributes"]["cache_key"] == "visible-cache-key"


_CREDENTIALS = {
    "OTEL_EXPORTER_OTLP_HEADERS": "authorization=Bearer CRED-otlp-header,x-api-key=CRED-api-key",
    "WANDB_API_KEY": "CRED-wandb",
    "HF_TOKEN": "CRED-hf",
    "AWS_SECRET_ACCESS_KEY": "CRED-aws",
    "GITHUB_TOKEN": "CRED-github",
    "NEMO_LENS_API_TOKEN": "CRED-unknown-nemo-variable",
    "MY_PASSWORD": "CRED-password",
}

_CREDENTIAL_JOB = """
from nemo.lens import NemoLensConfig, managed_span, setup_telemetry

handle = setup_telemetry(NemoLensConfig.from_env(), rank=0, world_size=1)
with managed_span("job", "train.job", note="ordinary"):
    handle.meter.create_counter("train.steps").add(1)
report(finished=handle.shutdown(), resource=dict(handle.resource_attributes))
"""


def _credential_env(**extra: str) -> dict[str, str]:
    return {
        **_CREDENTIALS,
        "NEMO_LENS_ENABLED": "1",
        "NEMO_LENS_SPAN_GROUPS": "all",
        "WANDB_ENTITY": "team",
        "WANDB_PROJECT": "project",
        **extra,
    }


def test_credentials_are_used_but_never_exported(
    tmp_path: Path, otlp_receiver: OtlpReceiver
) -> None:
    otlp_job = run_job(
        _CREDENTIAL_JOB,
        env=_credential_env(
            NEMO_LENS_EXPORTER="otlp",
            OTEL_EXPORTER_OTLP_PROTOCOL="http/protobuf",
            OTEL_EXPORTER_OTLP_ENDPOINT=otlp_receiver.endpoint,
        ),
    )
    assert otlp_job.returncode == 0, otlp_job.stderr
    path = tmp_path / "spans.jsonl"
    file_job = run_job(
        _CREDENTIAL_JOB,
        env=_credential_env(NEMO_LENS_EXPORTER="file", NEMO_LENS_TRACE_FILE=str(path)),
    )
    assert file_job.returncode == 0, file_job.stderr

    # The credential did its job: it went to the collector as a header ...
    paths = sorted({request.path for request in otlp_receiver.requests})
    assert paths == ["/v1/metrics", "/v1/traces"]
    for request in otlp_receiver.requests:
        assert request.headers["authorization"] == "Bearer CRED-otlp-header"
        assert request.headers["x-api-key"] == "CRED-api-key"
        # ... and nowhere in what was exported: spans, metrics, resources.
        assert b"CRED-" not in request.body
    exported_files = [path, path.with_name("spans.metrics.jsonl")]
    for exported in exported_files:
        assert "CRED-" not in exported.read_text(encoding="utf-8")
    for job in (otlp_job, file_job):
        assert "CRED-" not in _everything(job.result["resource"])
        assert "CRED-" not in job.stdout + job.stderr
    # The resource still carries what it should from the same environment.
    resource = read_spans(path)[0]["resource"]
    assert resource["wandb.entity"] == "team" and resource["wandb.project"] == "project"


def test_a_password_in_the_endpoint_stays_out_of_the_logs(dead_endpoint: str) -> None:
    endpoint = dead_endpoint.replace("http://", "http://trainer:CRED-url-password@")
    job = run_job(
        _CREDENTIAL_JOB,
        env=_credential_env(
            NEMO_LENS_EXPORTER="otlp",
            OTEL_EXPORTER_OTLP_PROTOCOL="http/protobuf",
            OTEL_EXPORTER_OTLP_ENDPOINT=endpoint,
            NEMO_LENS_METRICS_ENABLED="0",
        ),
    )
    assert job.returncode == 0, job.stderr
    # The failure is reported, with the endpoint a reader can act on ...
    (warning,) = job.stderr_lines("cannot export traces")
    assert dead_endpoint.removeprefix("http://") in warning
    # ... and without the password, even where the SDK's own message quoted the URL.
    assert "CRED-" not in job.stdout + job.stderr


# -- every output, every door ----------------------------------------------------------------

_PLANTED_JOB = """
import logging
from opentelemetry import _logs as otel_logs
from opentelemetry.trace import Link
from nemo.lens import NemoLensConfig, managed_span, setup_telemetry
from nemo.lens.logging_bridge import setup_logging_bridge

# Everything any library logs, at every level, goes to stderr and is scanned.
logging.basicConfig(level=logging.DEBUG, stream=sys.stderr)
handle = setup_telemetry(NemoLensConfig.from_env())
setup_logging_bridge("app", level=logging.DEBUG)
app = logging.getLogger("app")
with managed_span("step", "train.step", api_key="SECRET-span-keyword") as span:
    span.set_attribute("http.request.header.authorization", "SECRET-span-set")
    span.set_attribute("config", {"hf_token": "SECRET-span-nested", "lr": 0.1})
    span.add_event("login", {"access_token": "SECRET-event"})
    linked = span.get_span_context()
    app.info("step done", extra={"api_key": "SECRET-log-extra", "step": 1})
with handle.tracer.start_as_current_span(
    "raw", links=[Link(linked, {"aws_secret_access_key": "SECRET-link"})]
):
    pass
handle.meter.create_counter("train.requests").add(1, {"api_key": "SECRET-metric"})
handle.meter.create_histogram("train.latency").record(0.5, {"Token": "SECRET-metric-2"})
otel_logs.get_logger_provider().get_logger("raw").emit(
    body="raw record", attributes={"password": "SECRET-otel-log"}
)
report(finished=handle.shutdown())
"""

_PLANTED_CREDENTIALS = {
    "OTEL_EXPORTER_OTLP_HEADERS": (
        "authorization=Bearer%20SECRET-header-token,x-api-key=SECRET-header-apikey"
    ),
}


def _planted_env(endpoint: str, **extra: str) -> dict[str, str]:
    url = endpoint.replace("http://", "http://trainer:SECRET-url-password@")
    env = {
        "NEMO_LENS_ENABLED": "1",
        "NEMO_LENS_SPAN_GROUPS": "all",
        "NEMO_LENS_LOGS_ENABLED": "1",
        "NEMO_LENS_EXPORTER": "otlp",
        "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
        **_PLANTED_CREDENTIALS,
    }
    for signal in ("TRACES", "METRICS", "LOGS"):
        env[f"OTEL_EXPORTER_OTLP_{signal}_ENDPOINT"] = (
            f"{url}/v1/{signal.lower()}?token=SECRET-url-query-{signal.lower()}"
        )
    env.update(extra)
    return env


def _no_secret_in(job: Job) -> None:
    for stream, text in (("stdout", job.stdout), ("stderr", job.stderr)):
        assert "SECRET" not in text, f"a secret in {stream}:\n{text}"


def test_no_planted_secret_appears_in_anything_a_run_prints_or_exports(
    tmp_path: Path, otlp_receiver: OtlpReceiver
) -> None:
    job = run_job(_PLANTED_JOB, env=_planted_env(otlp_receiver.endpoint))
    assert job.returncode == 0, job.stderr
    assert job.result["finished"] is True
    _no_secret_in(job)
    assert "urllib3.connectionpool" in job.stderr  # DEBUG logging was on, and scrubbed
    paths = {request.path.split("?")[0] for request in otlp_receiver.requests}
    assert paths == {"/v1/traces", "/v1/metrics", "/v1/logs"}
    for request in otlp_receiver.requests:
        # The credentials did their job: in the headers and the URL (requests
        # turns the URL's user and password into the authorization header) ...
        assert request.headers["x-api-key"] == "SECRET-header-apikey"
        assert request.headers["authorization"].startswith("Basic ")
        assert "token=SECRET-url-query-" in request.path
        # ... and nothing planted in an attribute left the process.
        assert b"SECRET" not in request.body, request.path
        assert b"[REDACTED]" in request.body, request.path

    # The same run with the file exporter: every file it writes.
    path = tmp_path / "spans.jsonl"
    file_job = run_job(
        _PLANTED_JOB,
        env=_planted_env(
            otlp_receiver.endpoint, NEMO_LENS_EXPORTER="file", NEMO_LENS_TRACE_FILE=str(path)
        ),
    )
    assert file_job.returncode == 0, file_job.stderr
    _no_secret_in(file_job)
    written = sorted(tmp_path.iterdir())
    assert [p.name for p in written] == ["spans.jsonl", "spans.logs.jsonl", "spans.metrics.jsonl"]
    for exported in written:
        text = exported.read_text(encoding="utf-8")
        assert "SECRET" not in text, exported.name
        assert "[REDACTED]" in text, exported.name


class _Refusing(OtlpReceiver):
    """Answers every export with 500, so every failure path logs."""

    def __init__(self) -> None:
        super().__init__()
        handler = self.server.RequestHandlerClass

        def do_post(request: Any) -> None:
            length = int(request.headers.get("Content-Length", "0"))
            request.rfile.read(length)
            request.send_response(500)
            request.send_header("Content-Length", "0")
            request.end_headers()

        handler.do_POST = do_post  # type: ignore[attr-defined]


@pytest.mark.parametrize("collector", ["refusing connections", "answering 500"])
def test_no_planted_secret_appears_in_the_failure_reports(
    dead_endpoint: str, collector: str
) -> None:
    receiver = _Refusing() if collector == "answering 500" else None
    endpoint = receiver.endpoint if receiver is not None else dead_endpoint
    try:
        job = run_job(
            _PLANTED_JOB,
            env=_planted_env(endpoint, OTEL_EXPORTER_OTLP_TIMEOUT="2"),
        )
    finally:
        if receiver is not None:
            receiver.close()
    assert job.returncode == 0, job.stderr
    assert job.result["finished"] is False
    assert len(job.stderr_lines("could not deliver")) == 1, job.stderr
    (warning,) = job.stderr_lines("nemo.lens: cannot export")
    assert endpoint.removeprefix("http://") in warning  # where, without the credentials
    _no_secret_in(job)


_MALFORMED_HEADERS_JOB = """
from nemo.lens import NemoLensConfig, setup_telemetry

try:
    setup_telemetry(NemoLensConfig.from_env())
except ValueError as error:
    print(error, file=sys.stderr)
    report(error=str(error))
"""


@pytest.mark.parametrize("protocol", ["grpc", "http/protobuf"])
def test_a_malformed_header_variable_is_refused_without_quoting_it(protocol: str) -> None:
    # The SDK's own warning printed the whole header, bearer token and all.
    job = run_job(
        _MALFORMED_HEADERS_JOB,
        env={
            "NEMO_LENS_ENABLED": "1",
            "NEMO_LENS_EXPORTER": "otlp",
            "OTEL_EXPORTER_OTLP_PROTOCOL": protocol,
            "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9",
            "OTEL_EXPORTER_OTLP_HEADERS": "x-team=ml,Authorization: Bearer SECRET-malformed",
        },
    )
    assert job.returncode == 0, job.stderr
    assert job.result["error"] == (
        "OTEL_EXPORTER_OTLP_HEADERS is malformed: entry 2 of 2 has no '=' between a name and a "
        "value (its text is not shown: it may hold a credential); write it as "
        "name1=value1,name2=value2 with each value URL-encoded, e.g. "
        "authorization=Bearer%20<token>"
    )
    _no_secret_in(job)
