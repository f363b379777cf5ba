"""The commands read the console's default layout -- the SDK's ``to_json`` of each span --
as they read the ``file`` exporter's lines, and skip the metric and log lines between them."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

from nemo.lens import NemoLensConfig, semconv, setup_telemetry
from nemo.lens.cli._engine import connect
from tests.cli.conftest import EPOCH, MS, Result, line, record_training, span_dict, write_lines

Run = Callable[..., Result]

TRACE = 0xAB * (2**120 // 0xAB)  # any 128-bit id
PARENT, CHILD = 0x1111, 0x2222


def _sdk_line(
    name: str,
    *,
    span_id: int,
    parent: int | None = None,
    start_ns: int,
    end_ns: int,
    group: str = "step",
    status: Status | None = None,
    events: tuple[Event, ...] = (),
    kind: SpanKind = SpanKind.INTERNAL,
) -> str:
    """A span line exactly as the console prints it by default: the SDK's to_json."""

    def context(span: int) -> SpanContext:
        return SpanContext(TRACE, span, False, TraceFlags(TraceFlags.SAMPLED))

    span = ReadableSpan(
        name=name,
        context=context(span_id),
        parent=None if parent is None else context(parent),
        resource=Resource({semconv.SERVICE_NAME: "svc", semconv.RUN_ID: "run1", semconv.RANK: 3}),
        attributes={semconv.SPAN_GROUP: group},
        events=events,
        kind=kind,
        status=status or Status(StatusCode.UNSET),
        start_time=start_ns,
        end_time=end_ns,
    )
    text: str = span.to_json(indent=None)
    return text


def _read(tmp_path: Path, text: str) -> dict[str, Any]:
    """The one span of a trace of one line, as the engine reads it (every column)."""
    trace = write_lines(tmp_path / "t.jsonl", [text])
    with connect([str(trace)], detail=True) as engine:
        columns = [row[0] for row in engine.rows("DESCRIBE spans")]
        (row,) = engine.rows("SELECT * FROM spans")
    return dict(zip(columns, row, strict=True))


def test_a_to_json_line_reads_as_the_span_it_describes(tmp_path: Path) -> None:
    start = EPOCH + 123_456_000  # whole microseconds: what the SDK's times hold
    span = _read(
        tmp_path,
        _sdk_line(
            "train.step",
            span_id=CHILD,
            parent=PARENT,
            start_ns=start,
            end_ns=start + 25 * MS,
            status=Status(StatusCode.ERROR, "boom"),
            events=(Event("retry", {"attempt": 2}, timestamp=start + MS),),
            kind=SpanKind.CLIENT,
        ),
    )
    assert span["name"] == "train.step"
    assert (span["trace_id"], span["span_id"], span["parent_span_id"]) == (
        f"{TRACE:032x}",
        f"{CHILD:016x}",
        f"{PARENT:016x}",
    )
    assert (span["start_ns"], span["end_ns"]) == (start, start + 25 * MS)
    assert (span["status_code"], span["status_description"]) == ("ERROR", "boom")
    assert span["span_group"] == "step"
    assert (span["rank"], span["run_id"], span["service"]) == (3, "run1", "svc")
    assert json.loads(span["events"]) == [
        {"name": "retry", "time_unix_nano": start + MS, "attributes": {"attempt": 2}}
    ]


def test_times_are_read_to_the_microsecond_the_sdk_writes(tmp_path: Path) -> None:
    # The SDK's to_json keeps microseconds (rounded): the nanoseconds are not in the line.
    start, end = EPOCH + 1_000_200, EPOCH + 5_000_000
    span = _read(tmp_path, _sdk_line("s", span_id=CHILD, start_ns=start, end_ns=end))
    assert (span["start_ns"] - EPOCH, span["end_ns"] - EPOCH) == (1_000_000, 5_000_000)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        (
            "start_time",
            "yesterday",
            "span field 'start_time' must be an ISO-8601 time such as "
            "'2025-01-01T12:00:00.123456Z', got 'yesterday'",
        ),
        (
            "end_time",
            "2025-01-01T12:00:00.000001",
            "span field 'end_time' must say its UTC offset ('Z'), got '2025-01-01T12:00:00.000001'",
        ),
        ("parent_id", "1111", "span field 'parent_id' must be a 0x-prefixed hex id, got '1111'"),
        ("resource", [], "span field 'resource' must be a JSON object, got []"),
    ],
    ids=["not-a-time", "no-offset", "not-0x", "resource-not-object"],
)
def test_a_bad_field_of_a_to_json_line_is_named(
    run: Run, tmp_path: Path, field: str, value: object, message: str
) -> None:
    good = _sdk_line("s", span_id=CHILD, start_ns=EPOCH, end_ns=EPOCH + MS)
    record = json.loads(good)
    record[field] = value
    trace = write_lines(tmp_path / "t.jsonl", [good] * 6 + [json.dumps(record)])

    result = run("summarize", str(trace))

    assert result.status == 1
    assert result.err_lines[0] == f"nemo-lens: error: {trace}:7: {message}"


def _log_line() -> str:
    exporter: InMemoryLogRecordExporter = InMemoryLogRecordExporter()  # type: ignore[no-untyped-call]
    provider = LoggerProvider()
    provider.add_log_record_processor(SimpleLogRecordProcessor(exporter))
    provider.get_logger("app").emit(body="hello")
    (record,) = exporter.get_finished_logs()
    text: str = record.to_json(indent=None)
    return text


def test_summarize_reads_both_layouts_and_skips_metric_and_log_lines(
    run: Run, tmp_path: Path
) -> None:
    metrics = json.dumps({"resource_metrics": []})
    trace = write_lines(
        tmp_path / "mixed.log",
        [
            _sdk_line("a", span_id=PARENT, start_ns=EPOCH, end_ns=EPOCH + 10 * MS),
            metrics,
            line(span_dict("b", group="step", rank=3, start_ms=20, end_ms=50)),
            _log_line(),
            _sdk_line("c", span_id=CHILD, start_ns=EPOCH + 60 * MS, end_ns=EPOCH + 80 * MS),
        ],
    )
    result = run("summarize", str(trace))
    assert result.status == 0, result.err
    assert result.err == ""
    step = next(row for row in result.out_lines if row.split()[:1] == ["step"])
    assert step.split()[:3] == ["step", "3", "60.00"]  # 10 + 30 + 20 ms


def test_captured_default_console_output_summarizes_to_the_file_exporters_table(
    run: Run, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    tables = {}
    for exporter in ("console", "file"):
        path = tmp_path / f"{exporter}.jsonl"
        config = NemoLensConfig(
            enabled=True,
            exporter=exporter,
            trace_file=str(path),
            span_groups="per_step",
            metrics_enabled=False,
        )
        capsys.readouterr()
        handle = setup_telemetry(config)
        record_training(steps=3)
        handle.shutdown()
        if exporter == "console":
            path.write_text(capsys.readouterr().out, encoding="utf-8")
            assert json.loads(path.read_text().splitlines()[0])["context"]  # the SDK's layout
        result = run("summarize", str(path))
        assert result.status == 0, result.err
        # The span counts per group (durations differ between the two runs).
        tables[exporter] = sorted(row.split()[:2] for row in result.out_lines[2:])
    assert tables["console"] == tables["file"]
