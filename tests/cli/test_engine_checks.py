"""The engine's checks of a record read each value's type from its JSON text (the first
character, a whole number's digits): a value of the wrong type must still send the
command to the careful reader, which names the line, and a string holding escapes must
read as the careful reader reads it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from nemo.lens import semconv
from nemo.lens.cli._engine import connect

from .conftest import Result, line, span_dict, write_lines

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
