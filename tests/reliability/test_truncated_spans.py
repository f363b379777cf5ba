"""Spans still open at shutdown arrive truncated, with the event that says why, everywhere.

Upstream v0.2.0's data (COMPAT.md §4): the attribute ``nemo.span.truncated=True``
**and** an event ``nemo.span.truncated`` whose ``nemo.span.truncated.reason`` is
``"still open at telemetry shutdown"``. Both kinds of span get it -- the SDK's
(``handle.tracer``) and the ones the primitives record -- and every exporter
writes it. A span that ended on its own carries neither.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.reliability.conftest import OtlpReceiver, read_spans, run_job

ATTRIBUTE = "nemo.span.truncated"
EVENT = "nemo.span.truncated"
REASON_KEY = "nemo.span.truncated.reason"
REASON = "still open at telemetry shutdown"

OPEN = ("recorded.open", "recorded.open.child", "sdk.open")
CLOSED = ("recorded.closed", "sdk.closed")

_JOB = """
from nemo.lens import NemoLensConfig, managed_span, setup_telemetry

exporter, path = sys.argv[1], sys.argv[2]
config = NemoLensConfig(enabled=True, exporter=exporter, trace_file=path,
                        metrics_enabled=False, span_groups="all")
handle = setup_telemetry(config)
with managed_span("step", "recorded.closed"):
    pass
handle.tracer.start_span("sdk.closed").end()
# Left open, as a job interrupted mid-step leaves them.
managed_span("job", "recorded.open").__enter__()
managed_span("step", "recorded.open.child").__enter__()
handle.tracer.start_span("sdk.open")
handle.shutdown()
"""


def _check(spans: dict[str, tuple[dict[str, Any], list[tuple[str, dict[str, Any]]]]]) -> None:
    """*spans*: name -> (attributes, [(event name, event attributes)])."""
    assert set(spans) == {*OPEN, *CLOSED}
    for name in OPEN:
        attributes, events = spans[name]
        assert attributes[ATTRIBUTE] is True, name
        assert events == [(EVENT, {REASON_KEY: REASON})], name
    for name in CLOSED:
        attributes, events = spans[name]
        assert ATTRIBUTE not in attributes, name
        assert events == [], name


def test_the_file_exporter_writes_the_attribute_and_the_event(tmp_path: Path) -> None:
    path = tmp_path / "spans.jsonl"
    job = run_job(_JOB, "file", str(path))
    assert job.returncode == 0, job.stderr
    _check(
        {
            span["name"]: (
                span["attributes"],
                [(event["name"], event["attributes"]) for event in span["events"]],
            )
            for span in read_spans(path)
        }
    )


def test_otlp_sends_the_attribute_and_the_event(otlp_receiver: OtlpReceiver) -> None:
    def values(key_values: Any) -> dict[str, Any]:
        return {
            item.key: getattr(item.value, item.value.WhichOneof("value")) for item in key_values
        }

    env = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": otlp_receiver.endpoint,
        "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
    }
    job = run_job(_JOB, "otlp", "", env=env)
    assert job.returncode == 0, job.stderr
    _check(
        {
            span.name: (
                values(span.attributes),
                [(event.name, values(event.attributes)) for event in span.events],
            )
            for span in otlp_receiver.spans()
        }
    )


def test_the_console_prints_the_attribute_and_the_event(tmp_path: Path) -> None:
    # In its default layout, the SDK's to_json of each span.
    job = run_job(_JOB, "console", str(tmp_path / "unused.jsonl"))
    assert job.returncode == 0, job.stderr
    lines = [json.loads(line) for line in job.stdout.splitlines()]
    assert all("context" in span for span in lines)
    _check(
        {
            span["name"]: (
                span["attributes"],
                [(event["name"], event["attributes"]) for event in span["events"]],
            )
            for span in lines
        }
    )
