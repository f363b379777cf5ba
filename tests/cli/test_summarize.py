"""``nemo-lens summarize``: the per-rank, per-group table, and how bad input is reported."""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from nemo.lens import NemoLensConfig, semconv, setup_telemetry
from nemo.lens.cli._table import format_duration
from nemo.lens.groups import SpanGroup
from tests.trace_file import spans_in

from .conftest import Result, line, record_training, span_dict, write_lines

Run = Callable[..., Result]


def steps_trace(path: Path) -> Path:
    """A job of 100 ms with four steps of 10, 20, 30 and 40 ms, and one ungrouped span."""
    records = [
        span_dict("train.step", group="step", start_ms=1, end_ms=11),
        span_dict("train.step", group="step", start_ms=11, end_ms=31),
        span_dict("train.step", group="step", start_ms=31, end_ms=61),
        span_dict("train.step", group="step", start_ms=61, end_ms=101),
        span_dict("helper", start_ms=0, end_ms=5),
        span_dict("train.job", group="job", start_ms=0, end_ms=100),
    ]
    return write_lines(path, [line(record) for record in records])


def test_prints_count_total_mean_p50_and_p99_per_group(run: Run, tmp_path: Path) -> None:
    trace = steps_trace(tmp_path / "t.jsonl")

    result = run("summarize", str(trace))

    assert result.status == 0
    assert result.err == ""
    assert result.out_lines == [
        "rank 0 (service svc, run run1, 6 spans)",
        "  group   spans      total       mean        p50        p99",
        "  job         1  100.00 ms  100.00 ms  100.00 ms  100.00 ms",
        "  step        4  100.00 ms   25.00 ms   25.00 ms   39.70 ms",
        "  (none)      1    5.00 ms    5.00 ms    5.00 ms    5.00 ms",
    ]


def test_summarizes_what_the_file_exporter_wrote(run: Run, real_trace: Callable[..., Path]) -> None:
    trace = real_trace(steps=3)

    result = run("summarize", str(trace))

    assert result.status == 0
    assert result.out_lines[0] == "rank 0 (service nemo, run testrun, 13 spans)"
    counts = {row.split()[0]: int(row.split()[1]) for row in result.out_lines[2:]}
    assert counts == {
        "job": 1,
        "model_init": 1,
        "step": 3,
        "forward_backward": 3,
        "optimizer": 3,
        "checkpoint": 1,
        "(none)": 1,  # span_cm sets no group
    }
    assert result.out_lines[2].split()[0] == "job"  # the longest total comes first


def test_one_table_per_rank_in_rank_order(run: Run, real_trace: Callable[..., Path]) -> None:
    rank1 = real_trace(rank=1, world_size=2, steps=2)
    rank0 = real_trace(rank=0, world_size=2, steps=1)

    result = run("summarize", str(rank1), str(rank0))

    headings = [row for row in result.out_lines if row and not row.startswith(" ")]
    assert headings == [
        "rank 0 (service nemo, run testrun, 7 spans)",
        "rank 1 (service nemo, run testrun, 10 spans)",
    ]
    assert "" in result.out_lines  # a blank line between the tables


def test_runs_appended_to_one_file_are_told_apart(run: Run, tmp_path: Path) -> None:
    trace = write_lines(
        tmp_path / "t.jsonl",
        [
            line(span_dict("a", group="job", start_ms=0, end_ms=1, run="first")),
            line(span_dict("b", group="job", start_ms=5, end_ms=7, run="second")),
        ],
    )

    result = run("summarize", str(trace))

    headings = [row for row in result.out_lines if row.startswith("rank")]
    assert headings == [
        "rank 0 of run first (service svc, 1 span)",
        "rank 0 of run second (service svc, 1 span)",
    ]


def test_spans_without_a_rank_are_summarized_last(run: Run, tmp_path: Path) -> None:
    trace = write_lines(
        tmp_path / "t.jsonl",
        [
            line(span_dict("a", group="job", start_ms=0, end_ms=1, rank=None)),
            line(span_dict("b", group="job", start_ms=0, end_ms=1, rank=3)),
        ],
    )

    result = run("summarize", str(trace))

    headings = [row for row in result.out_lines if row and not row.startswith(" ")]
    assert [heading.split(" (")[0] for heading in headings] == ["rank 3", "unknown rank"]


def test_reads_standard_input(run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = steps_trace(tmp_path / "t.jsonl").read_bytes()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))

    result = run("summarize", "-")

    assert result.status == 0
    assert result.out_lines[3] == "  step        4  100.00 ms   25.00 ms   25.00 ms   39.70 ms"


def test_captured_console_output_is_summarized_with_skip_invalid(
    run: Run, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    config = NemoLensConfig(
        enabled=True, exporter="console", span_groups="per_step", metrics_enabled=False
    )
    handle = setup_telemetry(config)
    print("epoch 1 starting")  # the program's own output, between the span lines
    record_training(steps=2)
    print("done")
    handle.shutdown()
    captured = tmp_path / "job.log"
    captured.write_text(capsys.readouterr().out, encoding="utf-8")

    strict = run("summarize", str(captured))
    assert strict.status == 1
    assert strict.err_lines == [
        f"nemo-lens: error: {captured}:1: not a JSON span record (Expecting value at column "
        "1): 'epoch 1 starting'",
        "  hint: to skip lines that are not spans (a program's own output captured with the "
        "console exporter, a line cut short by a killed job), pass --skip-invalid",
    ]
    assert strict.out == ""

    lenient = run("summarize", "--skip-invalid", str(captured))
    assert lenient.status == 0
    assert lenient.err_lines == [
        f"nemo-lens: warning: skipped {captured}:1: not a JSON span record (Expecting value at "
        "column 1): 'epoch 1 starting'",
        f"nemo-lens: warning: skipped {captured}:{len(captured.read_text().splitlines())}: "
        "not a JSON span record (Expecting value at column 1): 'done'",
    ]
    counts = {row.split()[0]: int(row.split()[1]) for row in lenient.out_lines[2:]}
    assert counts["step"] == 2


def test_metrics_and_log_lines_of_the_console_exporter_are_not_spans(
    run: Run, tmp_path: Path
) -> None:
    metrics = json.dumps({"resource_metrics": []})
    log = json.dumps({"body": "hi", "severity_number": 9, "span_id": "", "trace_id": ""})
    trace = write_lines(
        tmp_path / "t.jsonl",
        [metrics, line(span_dict("a", group="job", start_ms=0, end_ms=2)), log],
    )

    result = run("summarize", str(trace))

    assert result.status == 0
    assert result.err == ""
    assert result.out_lines[2].split()[:2] == ["job", "1"]


# --- bad input ------------------------------------------------------------------------------


def test_a_missing_file_is_named_with_a_hint(run: Run, tmp_path: Path) -> None:
    missing = tmp_path / "nope.jsonl"

    result = run("summarize", str(missing))

    assert result.status == 1
    assert result.out == ""
    assert result.err_lines == [
        f"nemo-lens: error: {missing}: no such file",
        "  hint: the file exporter writes traces/{service_name}-{run_id}-rank{rank}.jsonl "
        "unless NEMO_LENS_TRACE_FILE says otherwise",
    ]


def test_an_empty_file_is_an_error(run: Run, tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.touch()

    result = run("summarize", str(empty))

    assert result.status == 1
    assert result.err_lines == [
        f"nemo-lens: error: {empty}: is empty: no span records",
        "  hint: is the job still running, or did this rank export nothing?",
    ]


def test_a_metrics_file_is_pointed_at_the_span_file(run: Run, tmp_path: Path) -> None:
    metrics = write_lines(tmp_path / "t.metrics.jsonl", [json.dumps({"resource_metrics": []})])

    result = run("summarize", str(metrics))

    assert result.status == 1
    assert result.err_lines[0] == (
        f"nemo-lens: error: {metrics}: no span records, only 1 metrics or log record(s); pass "
        "the span file (the one without .metrics or .logs in its name)"
    )


def test_a_directory_is_an_error_that_suggests_its_files(run: Run, tmp_path: Path) -> None:
    result = run("summarize", str(tmp_path))

    assert result.status == 1
    assert result.err_lines == [
        f"nemo-lens: error: {tmp_path}: is a directory",
        f"  hint: pass the trace files in it, e.g. {tmp_path}/*.jsonl",
    ]


def test_a_line_cut_short_is_reported_with_its_line_number(run: Run, tmp_path: Path) -> None:
    good = line(span_dict("a", group="job", start_ms=0, end_ms=1))
    trace = write_lines(tmp_path / "t.jsonl", [good, good, good[:30]])

    result = run("summarize", str(trace))

    assert result.status == 1
    assert result.out == ""
    assert result.err_lines[0] == (
        f"nemo-lens: error: {trace}:3: not a JSON span record (Unterminated string starting "
        """at column 24): '{"name":"a","trace_id":"ababab'"""
    )


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda r: r.update(name=7), "span field 'name' must be a string, got 7"),
        (
            lambda r: r.update(start_time_unix_nano="soon"),
            "span field 'start_time_unix_nano' must be an integer (nanoseconds since the epoch), "
            'got "soon"',
        ),
        (
            lambda r: r.pop("end_time_unix_nano"),
            "span field 'end_time_unix_nano' must be an integer (nanoseconds since the epoch), "
            "got null",
        ),
        (
            lambda r: r.update(end_time_unix_nano=r["start_time_unix_nano"] - 1),
            "span 'a' ends before it starts (end_time_unix_nano < start_time_unix_nano)",
        ),
        (
            lambda r: r.update(attributes=["x"]),
            """span field 'attributes' must be a JSON object, got ["x"]""",
        ),
        (
            lambda r: r.update(events=[{"name": "e"}]),
            "span field 'time_unix_nano' must be an integer (nanoseconds since the epoch), "
            "got null",
        ),
        (
            lambda r: r.pop("start_time_unix_nano"),
            "not a span record: a JSON object without 'start_time_unix_nano'",
        ),
    ],
)
def test_a_malformed_span_names_the_field_and_the_line(
    run: Run, tmp_path: Path, mutate: Callable[[dict[str, object]], object], message: str
) -> None:
    bad = span_dict("a", group="job", start_ms=0, end_ms=1)
    mutate(bad)
    trace = write_lines(
        tmp_path / "t.jsonl", [line(span_dict("ok", group="job", start_ms=0, end_ms=1)), line(bad)]
    )

    result = run("summarize", str(trace))

    assert result.status == 1
    assert result.err_lines[0] == f"nemo-lens: error: {trace}:2: {message}"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[1, 2]", "not a span record: a JSON array, not an object"),
        ('"span"', "not a span record: a JSON string, not an object"),
        (
            '{"start_time_unix_nano": NaN}',
            "not a JSON span record (NaN is not valid JSON; the exporters write it as the "
            "string 'NaN'): ",
        ),
    ],
)
def test_json_that_is_not_a_span_object_is_an_error(
    run: Run, tmp_path: Path, text: str, message: str
) -> None:
    trace = write_lines(tmp_path / "t.jsonl", [text])

    result = run("summarize", str(trace))

    assert result.status == 1
    assert result.err_lines[0].startswith(f"nemo-lens: error: {trace}:1: {message}")


def test_bytes_that_are_not_utf8_are_reported_at_their_line(run: Run, tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_bytes(b"\n\n\xff\xfe binary\n")

    result = run("summarize", str(trace))

    assert result.status == 1
    assert result.err_lines[0] == (
        f"nemo-lens: error: {trace}:3: is not UTF-8 text; is this a trace file?"
    )


def test_skip_invalid_lists_the_first_problems_and_counts_the_rest(
    run: Run, tmp_path: Path
) -> None:
    garbage = [f"noise {i}" for i in range(7)]
    trace = write_lines(
        tmp_path / "t.jsonl", [*garbage, line(span_dict("a", group="job", start_ms=0, end_ms=1))]
    )

    result = run("summarize", "--skip-invalid", str(trace))

    assert result.status == 0
    assert len(result.err_lines) == 6
    assert result.err_lines[0].startswith(f"nemo-lens: warning: skipped {trace}:1: ")
    assert result.err_lines[4].startswith(f"nemo-lens: warning: skipped {trace}:5: ")
    assert result.err_lines[5] == "nemo-lens: warning: skipped 2 more"


def test_skip_invalid_tolerates_an_empty_rank_file_but_not_nothing_at_all(
    run: Run, tmp_path: Path
) -> None:
    empty = tmp_path / "rank1.jsonl"
    empty.touch()
    good = steps_trace(tmp_path / "rank0.jsonl")

    partial = run("summarize", "--skip-invalid", str(good), str(empty))
    assert partial.status == 0
    assert partial.err_lines == [f"nemo-lens: warning: skipped {empty}: is empty: no span records"]

    nothing = run("summarize", "--skip-invalid", str(empty))
    assert nothing.status == 1
    assert nothing.err_lines[-1] == f"nemo-lens: error: {empty}: no span records in any input"


def test_no_trace_argument_is_a_usage_error(run: Run) -> None:
    result = run("summarize")

    assert result.status == 2
    assert "the following arguments are required: TRACE" in result.err


# --- the numbers ----------------------------------------------------------------------------


def test_percentiles_interpolate_between_ranks(run: Run, tmp_path: Path) -> None:
    spans = [line(span_dict("a", group="job", start_ms=0, end_ms=ms)) for ms in (10, 20, 30, 40)]
    spans.append(line(span_dict("b", group="step", start_ms=0, end_ms=7)))
    trace = write_lines(tmp_path / "t.jsonl", spans)

    result = run("summarize", str(trace))

    rows = {row.split()[0]: row.split()[1:] for row in result.out_lines[2:]}
    assert rows["job"] == ["4", "100.00", "ms", "25.00", "ms", "25.00", "ms", "39.70", "ms"]
    assert rows["step"] == ["1"] + ["7.00", "ms"] * 4


@pytest.mark.parametrize(
    ("nanoseconds", "text"),
    [
        (0, "0 ns"),
        (850, "850 ns"),
        (12_500, "12.5 µs"),
        (3_210_000, "3.21 ms"),
        (2_500_000_000, "2.50 s"),
        (3_612_400_000_000, "3612.40 s"),
    ],
)
def test_durations_use_a_readable_unit(nanoseconds: int, text: str) -> None:
    assert format_duration(nanoseconds) == text


def test_the_exporter_writes_the_group_attribute_the_reader_groups_by(
    real_trace: Callable[..., Path],
) -> None:
    # Guards the contract between helpers.py (writer) and the reader.
    trace = real_trace(steps=1)
    groups = {span["attributes"].get(semconv.SPAN_GROUP) for span in spans_in(trace)}
    assert groups == {
        SpanGroup.JOB,
        SpanGroup.MODEL_INIT,
        SpanGroup.STEP,
        SpanGroup.FORWARD_BACKWARD,
        SpanGroup.OPTIMIZER,
        SpanGroup.CHECKPOINT,
        None,
    }


_DEEP = "[" * 100_000 + "]" * 100_000
_HUGE = '{"start_time_unix_nano": ' + "9" * 5000 + "}"


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        (_DEEP, "not a JSON span record (nested more than 64 levels deep): '[[[["),
        (
            '{"attributes": ' + "[" * 70 + "]" * 70 + ', "start_time_unix_nano": 1}',
            "not a JSON span record (nested more than 64 levels deep): ",
        ),
        (_HUGE, "not a JSON span record (a number too long to read (Exceeds the limit (4300 "),
        (
            line({**span_dict("a", start_ms=0, end_ms=1), "end_time_unix_nano": 10**400}),
            "span field 'end_time_unix_nano' must be an integer (nanoseconds since the epoch) "
            "from 0 to 2**64 - 1, got 1000000000",
        ),
    ],
    ids=["100000-deep", "70-deep-attribute", "5000-digits", "10**400-ns"],
)
def test_a_hostile_line_is_reported_at_its_line_and_skipped_with_skip_invalid(
    run: Run, tmp_path: Path, text: str, reason: str
) -> None:
    good = line(span_dict("ok", group="job", start_ms=0, end_ms=1))
    trace = write_lines(tmp_path / "t.jsonl", [good, text, good])

    failed = run("summarize", str(trace))
    assert failed.status == 1
    assert failed.err_lines[0].startswith(f"nemo-lens: error: {trace}:2: {reason}")
    assert "Traceback" not in failed.err

    skipped = run("summarize", "--skip-invalid", str(trace))
    assert skipped.status == 0, skipped.err
    assert skipped.err_lines[0].startswith(f"nemo-lens: warning: skipped {trace}:2: {reason}")
    assert "rank 0 (service svc, run run1, 2 spans)" in skipped.out


def test_an_endless_line_is_read_only_so_far(run: Run, tmp_path: Path) -> None:
    # /dev/zero has no line end: reading "a line" of it grew until MemoryError.
    failed = run("summarize", "/dev/zero")
    assert failed.status == 1
    assert failed.err_lines[0] == (
        "nemo-lens: error: /dev/zero:1: line longer than 64 MiB; is this a trace file? (the rest "
        "of this input was not read)"
    )
    good = line(span_dict("ok", group="job", start_ms=0, end_ms=1))
    trace = write_lines(tmp_path / "t.jsonl", [good])
    skipped = run("summarize", "--skip-invalid", str(trace), "/dev/zero")
    assert skipped.status == 0
    assert skipped.err_lines[0].startswith("nemo-lens: warning: skipped /dev/zero:1: line longer")
    assert "rank 0 (service svc, run run1, 1 span)" in skipped.out


def test_an_endless_line_is_skipped_with_skip_invalid(tmp_path: Path, run: Run) -> None:
    from nemo.lens.cli._engine._careful import MAX_LINE_BYTES

    good = tmp_path / "good.jsonl"
    good.write_text(json.dumps(span_dict("a", start_ms=0, end_ms=1, group="g")) + "\n", "utf-8")
    endless = tmp_path / "endless.jsonl"
    endless.write_bytes(b"x" * (MAX_LINE_BYTES + 10))

    result = run("summarize", "--skip-invalid", str(good), str(endless))

    assert result.status == 0, result.err
    assert "line longer than" in result.err
