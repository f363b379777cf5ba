"""Several exporters from one config: ``exporter="otlp,file"`` / ``NEMO_LENS_EXPORTER``.

The list is validated as a whole, with errors that name the problem and the
fix; one name works exactly as before; set-up builds one processor per exporter
(each its own queue and policy), runs the OTLP checks whenever ``otlp`` is
among them, and a ``span_exporter=`` passed in replaces them all. What is lost
is counted and said per destination. (The round trips to a real receiver are in
``tests/reliability/test_otlp_and_file.py``.)
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanContext

from nemo.lens import NemoLensConfig, managed_span, setup_telemetry
from nemo.lens._sdk.exporters.guard import SpanGuard
from nemo.lens._sdk.exporters.health import ExportHealth
from nemo.lens._sdk.exporters.jsonl import JsonLinesSpanExporter
from nemo.lens._sdk.pipeline import Pipeline, fan_out
from nemo.lens._sdk.recording import RecordingSpan

_CHOICES = "use one of: otlp, console, file, none; several at once separated by commas"


@pytest.mark.parametrize(
    ("value", "names"),
    [
        ("otlp", ("otlp",)),
        (" Console ", ("console",)),
        ("otlp,file", ("otlp", "file")),
        (" FILE , otlp ", ("file", "otlp")),
        ("console,file,otlp", ("console", "file", "otlp")),
        ("otlp,", ("otlp",)),
    ],
)
def test_a_list_names_its_exporters_in_order(value: str, names: tuple[str, ...]) -> None:
    config = NemoLensConfig(exporter=value)
    assert config.exporter == value
    assert config.exporters == names


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (
            "zipkin",
            "unknown exporter 'zipkin' (Unknown exporter type: 'zipkin'); " + _CHOICES,
        ),
        (
            "otlp,Zipkin",
            "unknown exporter 'Zipkin' in 'otlp,Zipkin' (Unknown exporter type: 'Zipkin'); "
            + _CHOICES,
        ),
        ("file,otlp,FILE", "exporter 'file,otlp,FILE' names file twice; name each exporter once"),
        (
            "otlp,none,file",
            "exporter 'otlp,none,file' combines none (export nothing) with other exporters; "
            "use none alone, or otlp,file without it",
        ),
        ("", "unknown exporter '' (Unknown exporter type: '')"),
        (" , ", "unknown exporter ' , ' (Unknown exporter type: ' , ')"),
    ],
)
def test_a_bad_list_is_an_error_naming_the_problem(value: str, message: str) -> None:
    with pytest.raises(ValueError) as raised:
        NemoLensConfig(exporter=value)
    assert str(raised.value).startswith(message), str(raised.value)


def test_from_env_reads_a_list(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEMO_LENS_EXPORTER", "otlp,file")
    assert NemoLensConfig.from_env().exporters == ("otlp", "file")
    monkeypatch.setenv("NEMO_LENS_EXPORTER", "otlp,file,otlp")
    with pytest.raises(ValueError) as raised:
        NemoLensConfig.from_env()
    assert str(raised.value) == (
        "NEMO_LENS_EXPORTER='otlp,file,otlp': exporter 'otlp,file,otlp' names otlp twice; "
        "name each exporter once"
    )


def test_each_exporter_gets_its_own_processor_and_policy(tmp_path: Path) -> None:
    path = tmp_path / "spans.jsonl"
    config = NemoLensConfig(
        enabled=True, exporter="otlp,file", trace_file=str(path), metrics_enabled=False
    )
    handle = setup_telemetry(config)
    pipeline = handle._pipeline
    assert isinstance(pipeline, Pipeline)
    # The file waits for its writer (a graceful exit loses nothing); OTLP never waits.
    assert [batcher.when_full for batcher in pipeline.span_batchers] == ["drop", "block"]
    assert path.exists()
    handle.shutdown(100)  # nothing listens for OTLP here: do not wait for it


def test_one_exporter_costs_the_span_path_nothing() -> None:
    def sink(span: RecordingSpan) -> None:
        pass

    # With one processor, recorded spans go to it directly, as before lists existed.
    assert fan_out([sink]) is sink
    assert fan_out([]) is None
    seen: list[str] = []

    def saying(word: str) -> Callable[[RecordingSpan], None]:
        return lambda span: seen.append(word)

    both = fan_out([saying("a"), saying("b")])
    three = fan_out([saying(word) for word in "xyz"])
    assert both is not None and three is not None
    both(None)  # type: ignore[arg-type]
    three(None)  # type: ignore[arg-type]
    assert seen == ["a", "b", "x", "y", "z"]


def test_a_span_exporter_passed_in_replaces_every_configured_one(tmp_path: Path) -> None:
    path = tmp_path / "spans.jsonl"
    memory = InMemorySpanExporter()
    config = NemoLensConfig(
        enabled=True, exporter="otlp,file", trace_file=str(path), metrics_enabled=False
    )
    handle = setup_telemetry(config, span_exporter=memory)
    with managed_span("job", "run"):
        pass
    assert handle.shutdown(500)
    assert [span.name for span in memory.get_finished_spans()] == ["run"]
    assert not path.exists()  # no span file: the file exporter was replaced too


@pytest.mark.bad_input("otlp-timeout-not-a-number")
def test_the_otlp_checks_run_when_otlp_is_among_the_exporters(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "abc")
    path = tmp_path / "spans.jsonl"
    config = NemoLensConfig(enabled=True, exporter="file,otlp", trace_file=str(path))
    with pytest.raises(ValueError, match="OTEL_EXPORTER_OTLP_TIMEOUT='abc' is not a timeout"):
        setup_telemetry(config)
    assert not path.exists()  # nothing built
    setup_telemetry(NemoLensConfig(enabled=True, exporter="file", trace_file=str(path)))


def test_losses_are_said_and_counted_per_destination(caplog: pytest.LogCaptureFixture) -> None:
    health = ExportHealth()
    collector, file = "http://collector:4318/v1/traces", "/data/spans.jsonl"
    health.serves("traces", collector)
    health.serves("traces", file)
    with caplog.at_level(logging.WARNING, logger="nemo.lens.exporters.health"):
        health.export_failed("traces", 10, collector, "refused")
        health.export_failed("traces", 5, collector, "refused")
        health.export_failed("traces", 7, file, "No space left on device")
        health.export_failed("traces", 1, file, "No space left on device")
        health.dropped("traces", 3, "queue full", "the queue is full", collector)
    # One warning per kind of destination: a full disk is not hidden by the outage.
    warnings = [record.getMessage() for record in caplog.records]
    assert len(warnings) == 3, warnings
    assert f"cannot export traces to {collector} (refused)" in warnings[0]
    assert f"cannot export traces to {file} (No space left on device)" in warnings[1]
    assert warnings[2] == "the queue is full"
    assert health.lost() == {"traces": 26}
    assert health.summary(queued={("traces", collector): 4}) == (
        "nemo.lens: telemetry this process could not deliver: "
        f"3 span(s) dropped on the way to {collector} (queue full); "
        f"8 span(s) failed to export to {file}; "
        f"15 span(s) failed to export to {collector}; "
        f"4 span(s) still queued for {collector} when shutdown timed out"
    )


def test_with_one_destination_the_summary_reads_as_before() -> None:
    health = ExportHealth()
    health.serves("traces", "collector:4317")
    health.dropped("traces", 3, "queue full", "the queue is full", "collector:4317")
    assert health.summary(queued={("traces", "collector:4317"): 4}) == (
        "nemo.lens: telemetry this process could not deliver: 3 span(s) dropped (queue full); "
        "4 span(s) still queued when shutdown timed out"
    )


class _Lines:
    """A sink that keeps what it is given."""

    def __init__(self) -> None:
        self.text = ""

    def write(self, text: str) -> None:
        self.text += text

    def flush(self) -> None:
        """Nothing buffered."""

    def close(self) -> None:
        """Nothing to release."""


def test_an_export_after_shutdown_is_counted_without_blaming_the_destination(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # A shutdown that does not wait (timeout 0 or less) leaves a batch in flight; the
    # exporter, shut down, refuses it. Those spans are lost and counted, but no warning
    # says the destination failed (it did not; the job asked not to wait).
    health = ExportHealth()
    sink = _Lines()
    exporter = SpanGuard(JsonLinesSpanExporter(sink), health)
    spans = [_span("a"), _span("b")]
    with caplog.at_level(logging.DEBUG, logger="nemo.lens.exporters.health"):
        assert exporter.export(spans[:1]) == SpanExportResult.SUCCESS
        exporter.shutdown()
        assert exporter.export(spans) == SpanExportResult.FAILURE
    assert sink.text.count("\n") == 1
    assert health.lost() == {"traces": 2}
    assert [r.levelno for r in caplog.records] == [logging.DEBUG], caplog.records
    assert "exporting 2 traces" in caplog.records[0].getMessage()


def test_an_export_that_fails_before_shutdown_still_warns(
    caplog: pytest.LogCaptureFixture,
) -> None:
    health = ExportHealth()
    sink = _Lines()
    inner = JsonLinesSpanExporter(sink)
    inner.shutdown()  # refuses every export, as a destination that fails does
    exporter = SpanGuard(inner, health)
    with caplog.at_level(logging.WARNING, logger="nemo.lens.exporters.health"):
        assert exporter.export([_span("a")]) == SpanExportResult.FAILURE
    assert [r.levelno for r in caplog.records] == [logging.WARNING]
    assert health.lost() == {"traces": 1}


def _span(name: str) -> ReadableSpan:
    context = SpanContext(trace_id=1, span_id=len(name), is_remote=False)
    return ReadableSpan(name=name, context=context, start_time=1, end_time=2)
