"""The engine's checks of a record read each value's type from its JSON text (the first
character; an integer has no point nor exponent) or let DuckDB refuse it (attributes,
status and resource are read as structs): a value of the wrong type must still send the
command to the careful reader, which names the line, and the values read must be the
careful reader's (strings with escapes, iterations of every type, status texts)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from nemo.lens import semconv
from nemo.lens.cli._engine import connect
from nemo.lens.cli._engine._jsonl import OBJECT_BYTES

from .conftest import EPOCH, Result, line, span_dict, write_lines
from .reference.classify import _whole_number

Run = Callable[..., Result]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("start_time_unix_nano", 1.5),
        ("start_time_unix_nano", 1e21),
        ("start_time_unix_nano", "1700000000000000000"),
        ("start_time_unix_nano", -1),
        ("start_time_unix_nano", 2**64),
        ("end_time_unix_nano", True),
        ("name", 7),
        ("name", None),
        ("trace_id", 12),
        ("attributes", "x"),
        ("status", ["OK"]),
        ("events", {"name": "e"}),
        ("start_time_unix_nano", 1.0),
        ("start_time_unix_nano", 1e3),
        ("start_time_unix_nano", True),
        ("end_time_unix_nano", "1700000000000000000"),
        ("end_time_unix_nano", None),
        ("lifetime", 7),
        ("lifetime", ""),
        ("span_id", True),
        ("parent_span_id", 12),
        ("status", "OK"),
        ("attributes", [1]),
        ("resource", "x"),
        ("resource", 3),
        ("events", [{"name": "e", "time_unix_nano": 1.5}]),
    ],
)
def test_a_value_of_the_wrong_type_is_named_at_its_line(
    run: Run, tmp_path: Path, field: str, value: Any
) -> None:
    bad = span_dict("a", group="job", start_ms=0, end_ms=1)
    bad[field] = value
    ok = span_dict("ok", group="job", start_ms=0, end_ms=1)
    trace = write_lines(tmp_path / "t.jsonl", [line(ok), line(bad)])

    result = run("summarize", str(trace))

    assert result.status == 1
    assert result.err_lines[0].startswith(f"nemo-lens: error: {trace}:2: ")


def test_strings_with_escapes_read_as_written(tmp_path: Path) -> None:
    name = 'a "quoted" \\ name\n\u00e9\u2603'
    group = 'grp\t"x"'
    record = span_dict(
        name, group=group, start_ms=0, end_ms=1, attributes={"iteration": " 4 "}, span_id="ab" * 8
    )
    record["attributes"][semconv.SPAN_CATEGORY] = "prof\u00efling"
    plain = span_dict("plain", group="job", start_ms=0, end_ms=2, attributes={"iteration": 5.0})
    trace = write_lines(tmp_path / "t.jsonl", [line(record), line(plain)])

    with connect([str(trace)]) as engine:
        rows = engine.rows(
            "SELECT name, span_group, span_category, iteration, span_id FROM spans ORDER BY end_ns"
        )

    assert rows == [
        (name, group, "prof\u00efling", 4, "ab" * 8),
        ("plain", "job", None, 5, None),
    ]


_HEAD = {"trace_format": 2, "lifetime": "L1", "resource": {"service.name": "svc", "dl.rank": 0}}
_SPAN = {
    k: v for k, v in span_dict("s", group="job", start_ms=0, end_ms=1).items() if k != "resource"
}
_SPAN["lifetime"] = "L1"


@pytest.mark.parametrize(
    ("record", "field", "value"),
    [
        (_HEAD, "trace_format", 1.5),
        (_HEAD, "trace_format", "2"),
        (_HEAD, "trace_format", True),
        (_HEAD, "lifetime", 7),
        (_HEAD, "resource", ["x"]),
        ({"lifetime": "L1", "alive_at_unix_nano": EPOCH}, "alive_at_unix_nano", "5"),
        ({"lifetime": "L1", "alive_at_unix_nano": EPOCH}, "alive_at_unix_nano", 2.5),
        ({**_SPAN, "open_at_unix_nano": EPOCH}, "open_at_unix_nano", 1.5),
        ({**_SPAN, "open_at_unix_nano": EPOCH}, "start_time_unix_nano", "1"),
    ],
)
def test_a_format_2_record_of_the_wrong_type_is_named_at_its_line(
    run: Run, tmp_path: Path, record: dict[str, Any], field: str, value: Any
) -> None:
    bad = {**record, field: value}
    trace = write_lines(tmp_path / "t.jsonl", [json.dumps(_HEAD), line(_SPAN), json.dumps(bad)])

    result = run("summarize", str(trace))

    assert result.status == 1
    assert result.err_lines[0].startswith(f"nemo-lens: error: {trace}:3: ")


@pytest.mark.parametrize("detail", [False, True])
@pytest.mark.parametrize(
    "value",
    [3, 0, 3.0, 1e3, 3.5, " 4 ", "-4", "4_0", "4.0", "0x4", "1e3", "x", True, None, [3], {"n": 3}],
)
def test_an_iteration_reads_as_the_classifier_reads_it(
    tmp_path: Path, detail: bool, value: Any
) -> None:
    record = span_dict("s", group="step", start_ms=0, end_ms=1, attributes={"iteration": value})
    trace = write_lines(tmp_path / "t.jsonl", [line(record)])

    with connect([str(trace)], detail=detail) as engine:
        rows = engine.rows("SELECT iteration FROM spans")

    assert rows == [(_whole_number(value),)]


@pytest.mark.parametrize("detail", [False, True])
def test_status_and_resource_values_read_as_text(tmp_path: Path, detail: bool) -> None:
    record = span_dict("s", group="job", start_ms=0, end_ms=1, status=("ERROR", 'it "broke"'))
    odd = span_dict("t", group="job", start_ms=0, end_ms=2, rank=3)
    odd["status"] = {"code": 2, "description": None}
    odd["resource"]["service.name"] = 'sv"c'
    trace = write_lines(tmp_path / "t.jsonl", [line(record), line(odd)])

    with connect([str(trace)], detail=detail) as engine:
        rows = engine.rows(
            "SELECT status_code, status_description, rank, service FROM spans ORDER BY end_ns"
        )

    assert rows == [("ERROR", 'it "broke"', 0, "svc"), ("2", None, 3, 'sv"c')]


def test_an_iteration_attribute_that_is_also_a_group_key_reads_both(tmp_path: Path) -> None:
    record = span_dict("s", group="7", start_ms=0, end_ms=1)
    trace = write_lines(tmp_path / "t.jsonl", [line(record)])

    with connect([str(trace)], iteration_attribute=semconv.SPAN_GROUP) as engine:
        rows = engine.rows("SELECT span_group, iteration FROM spans")

    assert rows == [("7", 7)]


def test_a_resource_holding_a_key_named_attributes_reads_as_any_other(
    run: Run, tmp_path: Path
) -> None:
    # DuckDB reads the SDK layout's resource.attributes as an object and refuses a line
    # where it is not; the careful reader, which reads it as any key, reads the trace.
    record = span_dict("s", group="job", start_ms=0, end_ms=1)
    record["resource"]["attributes"] = "x"
    trace = write_lines(tmp_path / "t.jsonl", [line(record)])

    result = run("summarize", str(trace))

    assert result.status == 0, result.err_lines
    with connect([str(trace)]) as engine:
        assert engine.rows("SELECT name, service FROM spans") == [("s", "svc")]


@pytest.mark.parametrize("careful", [False, True])
def test_a_line_longer_than_duckdbs_object_size_is_read_whole(
    tmp_path: Path, careful: bool
) -> None:
    size = OBJECT_BYTES + (1 << 20)
    long = span_dict("long", group="job", start_ms=0, end_ms=3, attributes={"blob": "x" * size})
    short = span_dict("short", group="job", start_ms=0, end_ms=1)
    bad = '{"name": "not a span"}'  # sends the whole input to the careful reader
    lines = [line(short), line(long), *([bad] if careful else [])]
    trace = write_lines(tmp_path / "t.jsonl", lines)

    with connect([str(trace)], detail=True, skip_invalid=careful) as engine:
        rows = engine.rows("SELECT name, duration_ns, length(attributes) FROM spans ORDER BY name")
        skipped = len(engine.problems)

    assert [(name, duration) for name, duration, _ in rows] == [
        ("long", 3_000_000),
        ("short", 1_000_000),
    ]
    assert rows[0][2] > size
    assert skipped == int(careful)


def test_without_labels_only_name_and_the_trace_and_parent_ids_are_left_out(
    run: Run, tmp_path: Path, real_trace: Callable[..., Path]
) -> None:
    trace = real_trace(steps=3)
    dataset = tmp_path / "dataset"
    assert run("convert", "--to", "parquet", str(trace), "-o", str(dataset)).status == 0
    labels = ("name", "trace_id", "parent_span_id")
    for source in (trace, dataset):
        tables = {}
        for kept in (True, False):
            with connect([str(source)], labels=kept) as engine:
                columns = [row[0] for row in engine.rows("DESCRIBE spans")]
                rows = engine.rows("SELECT * FROM spans ORDER BY start_ns, span_id")
            tables[kept] = [dict(zip(columns, row, strict=True)) for row in rows]
        assert len(tables[True]) == len(tables[False]) > 3, source
        for full, bare in zip(tables[True], tables[False], strict=True):
            assert all(full[k] is not None for k in ("name", "trace_id")), source
            assert all(bare[k] is None for k in labels), source
            assert {k: v for k, v in full.items() if k not in labels} == {
                k: v for k, v in bare.items() if k not in labels
            }, source


@pytest.mark.parametrize("detail", [False, True])
def test_a_key_holding_null_reads_as_absent_with_and_without_detail(
    tmp_path: Path, detail: bool
) -> None:
    record = span_dict("s", group="job", start_ms=0, end_ms=1)
    record["attributes"][semconv.SPAN_GROUP] = None
    record["attributes"][semconv.LEGACY_SPAN_GROUP] = "legacy"
    record["resource"]["service.name"] = None
    trace = write_lines(tmp_path / "t.jsonl", [line(record)])

    with connect([str(trace)], detail=detail) as engine:
        assert engine.rows("SELECT span_group, service FROM spans") == [("legacy", "")]


def test_a_time_past_2262_is_named_at_its_line(run: Run, tmp_path: Path) -> None:
    record = span_dict("s", group="job", start_ms=0, end_ms=1)
    record["end_time_unix_nano"] = 2**63
    trace = write_lines(tmp_path / "t.jsonl", [line(record)])

    result = run("summarize", str(trace))

    assert result.err_lines == [
        f"nemo-lens: error: {trace}:1: span field 'end_time_unix_nano' holds a time past the "
        "year 2262 (2**63 ns since the epoch), which the engine cannot hold"
    ]


def test_a_pipe_is_read_once_and_its_bad_lines_are_named(run: Run, tmp_path: Path) -> None:
    import os
    import threading

    good = [line(span_dict(f"s{n}", group="job", start_ms=n, end_ms=n + 1)) for n in range(3)]
    results = []
    for skip in (False, True):
        pipe = tmp_path / f"trace-{skip}.pipe"
        os.mkfifo(pipe)
        text = "".join(f"{text}\n" for text in [good[0], "noise", *good[1:]])
        writer = threading.Thread(target=pipe.write_text, args=(text,), daemon=True)
        writer.start()
        results.append(run("summarize", *(["--skip-invalid"] * skip), str(pipe)))
        writer.join(10)
    failed, skipped = results

    assert failed.status == 1
    assert failed.err_lines[0].startswith(f"nemo-lens: error: {tmp_path}/trace-False.pipe:2: ")
    assert skipped.status == 0, skipped.err
    assert skipped.err_lines[0].startswith(f"nemo-lens: warning: skipped {tmp_path}/trace-True")
    assert "rank 0 (service svc, run run1, 3 spans)" in skipped.out


def test_a_record_holding_a_key_twice_is_named_and_skipped(run: Run, tmp_path: Path) -> None:
    good = line(span_dict("ok", group="job", start_ms=0, end_ms=1))
    twice = good.replace('{"name":"ok",', '{"name":"a","name":"b",', 1)
    nested = good.replace('"attributes":{', '"attributes":{"x":1,"x":2,', 1)  # DuckDB reads it
    trace = write_lines(tmp_path / "t.jsonl", [good, twice, nested])

    failed = run("summarize", str(trace))
    skipped = run("summarize", "--skip-invalid", str(trace))

    assert failed.err_lines[0].startswith(
        f"nemo-lens: error: {trace}:2: not a JSON span record (the key 'name' appears twice)"
    )
    assert skipped.status == 0
    assert skipped.err_lines[0].startswith(f"nemo-lens: warning: skipped {trace}:2: ")
    assert "2 spans" in skipped.out
