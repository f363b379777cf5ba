"""The pieces the reliability guarantees rest on, in process: queue policies, flush, reports.

The scenario tests run whole jobs; these pin down the rules those jobs depend
on with exact numbers: a dropping queue counts every span it drops, a blocking
queue loses none, ``force_flush`` keeps its timeout, redaction keeps the SDK's
drop counts, and log messages never carry a password.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence

import pytest
from opentelemetry.sdk.trace import ReadableSpan, SpanLimits, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

from nemo.lens._core.secrets import scrub
from nemo.lens._sdk.batching import BatchingSpanProcessor, WhenFull
from nemo.lens._sdk.exporters.guard import SpanGuard
from nemo.lens._sdk.exporters.health import ExportHealth, describe_destination
from nemo.lens._sdk.exporters.redaction import clean_span


class _Gate(SpanExporter):
    """Holds every export until released; counts what it was given."""

    def __init__(self, *, open_: bool = False, pause_s: float = 0.0) -> None:
        self.release = threading.Event()
        if open_:
            self.release.set()
        self.pause_s = pause_s
        self.exported = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.release.wait()
        time.sleep(self.pause_s)
        self.exported += len(spans)
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        self.release.set()


def _emit(processor: BatchingSpanProcessor, count: int) -> None:
    provider = TracerProvider()
    provider.add_span_processor(processor)
    tracer = provider.get_tracer("test")
    for i in range(count):
        tracer.start_span(f"s{i}").end()


def _processor(exporter: SpanExporter, when_full: WhenFull, **kw: float) -> BatchingSpanProcessor:
    options: dict[str, float] = {
        "max_queue_size": 10,
        "max_export_batch_size": 5,
        "schedule_delay_millis": 50,
    }
    options.update(kw)
    return BatchingSpanProcessor(exporter, when_full=when_full, **options)  # type: ignore[arg-type]


def test_a_dropping_queue_counts_every_span_it_drops() -> None:
    exporter = _Gate()
    processor = _processor(exporter, "drop")
    _emit(processor, 100)
    exporter.release.set()
    assert processor.close(timeout_millis=5000) is True
    lost = processor.health.lost().get("traces", 0)
    assert exporter.exported + lost == 100
    assert lost >= 100 - 10 - 5  # the queue and one batch in the exporter's hands
    summary = processor.health.summary()
    assert summary is not None and f"{lost} span(s) dropped (queue full)" in summary


def test_a_blocking_queue_loses_nothing() -> None:
    exporter = _Gate(open_=True, pause_s=0.002)
    processor = _processor(exporter, "block")
    _emit(processor, 500)
    assert processor.close(timeout_millis=10_000) is True
    assert exporter.exported == 500
    assert processor.health.summary() is None


def test_a_blocking_queue_gives_up_on_a_stalled_exporter(caplog: pytest.LogCaptureFixture) -> None:
    exporter = _Gate()  # never released: no batch ever completes
    processor = _processor(exporter, "block", stall_timeout_millis=200)
    started = time.monotonic()
    with caplog.at_level(logging.WARNING):
        _emit(processor, 100)
    # One stall timeout for the first span that found the queue full, no wait after.
    assert time.monotonic() - started < 0.2 + 2.0
    assert caplog.text.count("has not finished a batch in 200 ms") == 1
    exporter.release.set()
    processor.close(timeout_millis=5000)
    assert exporter.exported + processor.health.lost()["traces"] == 100


def test_force_flush_keeps_its_timeout() -> None:
    exporter = _Gate()
    processor = _processor(exporter, "drop")
    _emit(processor, 3)
    started = time.monotonic()
    assert processor.force_flush(timeout_millis=200) is False
    assert time.monotonic() - started < 0.2 + 1.0
    exporter.release.set()
    assert processor.force_flush(timeout_millis=5000) is True
    assert exporter.exported == 3
    processor.close()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"max_queue_size": 0}, "max_queue_size must be a positive number, got 0"),
        ({"max_export_batch_size": 20}, "must not exceed max_queue_size (10)"),
        ({"schedule_delay_millis": True}, "schedule_delay_millis must be a positive number"),
    ],
)
def test_bad_sizes_are_refused_with_the_rule(options: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError) as raised:
        _processor(_Gate(open_=True), "drop", **options)
    assert message in str(raised.value)


def test_redaction_copies_only_what_it_must_and_keeps_the_drop_counts() -> None:
    provider = TracerProvider(span_limits=SpanLimits(max_span_attributes=2))
    finished: list[ReadableSpan] = []

    class Keep(SpanExporter):
        def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
            finished.extend(spans)
            return SpanExportResult.SUCCESS

    provider.add_span_processor(SimpleSpanProcessor(Keep()))
    tracer = provider.get_tracer("test")
    tracer.start_span("plain", attributes={"loss": 0.5}).end()
    tracer.start_span("secret", attributes={"a": 1, "prompt": "hi", "c": 3}).end()
    plain, secret = finished
    assert clean_span(plain, {}) is plain
    hidden = clean_span(secret, {})
    # The SDK dropped the oldest attribute ("a") to stay within the limit.
    assert dict(hidden.attributes or {}) == {"prompt": "[REDACTED]", "c": 3}
    assert hidden.dropped_attributes == secret.dropped_attributes == 1
    assert hidden.context == secret.context and hidden.end_time == secret.end_time


def test_passwords_never_reach_a_log_line() -> None:
    assert scrub("to http://me:pw@host:4318/v1/traces") == "to http://host:4318/v1/traces"
    assert scrub("Failed to export to me:pw@host:4317, code 14") == (
        "Failed to export to host:4317, code 14"
    )
    assert scrub("at 10:32:01 on ipv4:127.0.0.1:4317") == "at 10:32:01 on ipv4:127.0.0.1:4317"

    class Otlp:
        _endpoint = "https://me:pw@collector:4318/v1/traces?token=abc#x"

    assert describe_destination(Otlp()) == "https://collector:4318/v1/traces"


def test_the_summary_says_nothing_when_nothing_was_lost() -> None:
    health = ExportHealth()
    health.export_succeeded("traces", "somewhere")
    assert health.summary() is None
    assert health.summary(queued={("traces", ""): 0}) is None
    health.export_failed("metrics", 1, "collector:4317", "refused")
    assert health.summary(queued={("traces", ""): 7}) == (
        "nemo.lens: telemetry this process could not deliver: 1 metric export(s) failed to "
        "export to collector:4317; 7 span(s) still queued when shutdown timed out"
    )


def test_only_calls_into_exporters_nemo_lens_made_are_quieted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # An exporter nemo.lens made has its own failure logs quieted while it is called
    # (and the first warning reported as the cause); the application's own, not.
    ours = logging.getLogger("nemo.lens.exporters.jsonl")

    class Theirs(SpanExporter):
        def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
            ours.warning("an application's own exporter")
            return SpanExportResult.FAILURE

    class Ours(Theirs):
        __module__ = "nemo.lens._sdk.exporters.jsonl"

        def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
            ours.warning("retrying in %d s", 1)
            return SpanExportResult.FAILURE

    health = ExportHealth()
    with caplog.at_level(logging.WARNING):
        SpanGuard(Ours(), health, name="file").export([])
        SpanGuard(Theirs(), health).export([])
        ours.warning("outside any export")
    passed = [record.getMessage() for record in caplog.records if record.name == ours.name]
    assert passed == ["an application's own exporter", "outside any export"]
    assert "cannot export traces to Ours (retrying in 1 s)" in caplog.text
