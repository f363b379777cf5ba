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

from tests.reliability.conftest import OtlpReceiver, read_spans, run_job

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
