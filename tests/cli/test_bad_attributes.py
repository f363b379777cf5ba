"""Attributes no command may read silently: a group named by a number, a value nested deeper
than the reader goes. Each is a bad record, ``file:line`` and why, skipped with --skip-invalid."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from nemo.lens import semconv

from .conftest import Result, line, span_dict, write_lines

Run = Callable[..., Result]
GOOD = line(span_dict("ok", group="job", start_ms=0, end_ms=1, span_id="01" * 8))
DEEP = "nested more than 64 levels deep"


def _commands(trace: Path, tmp_path: Path) -> list[list[str]]:
    out = str(tmp_path / "out")
    return [
        ["summarize", str(trace)],
        ["goodput", str(trace)],
        ["check", str(trace)],
        ["report", str(trace), "-o", out + ".html"],
        ["convert", str(trace), "-o", out + ".json"],
        ["convert", "--to", "parquet", str(trace), "-o", out],
        ["sql", "SELECT count(*) FROM spans", str(trace)],
    ]


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        pytest.param(42, "42", marks=pytest.mark.bad_input("trace-group-not-a-string")),
        (["a"], '["a"]'),
        (True, "true"),
    ],
)
@pytest.mark.parametrize("key", [semconv.SPAN_GROUP, semconv.LEGACY_SPAN_GROUP])
def test_a_group_that_is_not_a_string_is_reported_not_relabelled(
    run: Run, tmp_path: Path, key: str, value: Any, shown: str
) -> None:
    bad = span_dict("bad", start_ms=0, end_ms=1, span_id="02" * 8, attributes={key: value})
    trace = write_lines(tmp_path / "t.jsonl", [GOOD, line(bad)])
    message = f"{trace}:2: span attribute {key!r} must be a string (a span group's name), got "
    for command in _commands(trace, tmp_path):
        failed = run(*command)
        assert failed.status == 1, command
        assert failed.err_lines[0] == f"nemo-lens: error: {message}{shown}", command
    skipped = run("summarize", "--skip-invalid", str(trace))
    assert skipped.status == 0
    assert skipped.err_lines[0] == f"nemo-lens: warning: skipped {message}{shown}"
    assert "(none)" not in skipped.out and "1 span)" in skipped.out


def test_a_category_that_is_not_a_string_is_reported(run: Run, tmp_path: Path) -> None:
    bad = span_dict("bad", group="step", start_ms=0, end_ms=1, span_id="02" * 8)
    bad["attributes"][semconv.SPAN_CATEGORY] = 1
    trace = write_lines(tmp_path / "t.jsonl", [GOOD, line(bad)])
    failed = run("goodput", str(trace))
    assert failed.status == 1
    assert failed.err_lines[0].startswith(
        f"nemo-lens: error: {trace}:2: span attribute '{semconv.SPAN_CATEGORY}' must be a string"
    )


@pytest.mark.bad_input("trace-deep-attribute")
@pytest.mark.parametrize("field", ["attributes", "events", "resource"])
def test_a_value_nested_1000_deep_is_reported_by_every_command_that_reads_it(
    run: Run, tmp_path: Path, field: str
) -> None:
    record = span_dict("deep", group="job", start_ms=0, end_ms=1, span_id="02" * 8)
    if field == "events":
        record["events"] = [{"name": "e", "time_unix_nano": record["start_time_unix_nano"]}]
        text = line(record).replace('"name":"e"', '"name":"e","d":' + "[" * 1000 + "]" * 1000)
    else:
        text = line(record).replace(
            f'"{field}":{{', f'"{field}":{{"d":' + "[" * 1000 + "]" * 1000 + ","
        )
    json.loads(text.replace("[" * 1000 + "]" * 1000, "[]"))  # the line is JSON but for depth
    trace = write_lines(tmp_path / "t.jsonl", [GOOD, text])
    commands = _commands(trace, tmp_path)
    if field != "events":  # summarize, goodput and check take out only the keys they read
        commands = commands[3:]
    for command in commands:
        failed = run(*command)
        assert failed.status == 1, command
        assert "Traceback" not in failed.err
        assert failed.err_lines[0].startswith(
            f"nemo-lens: error: {trace}:2: not a JSON span record ({DEEP}): "
        ), command
        skipped = run(*command[:1], "--skip-invalid", *command[1:])
        assert skipped.status == 0, (command, skipped.err)
        assert DEEP in skipped.err_lines[0]


@pytest.mark.parametrize(("levels", "refused"), [(62, False), (63, True)])
def test_the_limit_is_the_careful_pass_s(
    run: Run, tmp_path: Path, levels: int, refused: bool
) -> None:
    # The line, its attributes and "d" are three levels: 62 more make 65.
    record = span_dict("deep", group="job", start_ms=0, end_ms=1, span_id="02" * 8)
    nested = "[" * levels + "]" * levels
    text = line(record).replace('"attributes":{', '"attributes":{"d":' + nested + ",")
    trace = write_lines(tmp_path / "t.jsonl", [GOOD, text])
    result = run("convert", str(trace), "-o", str(tmp_path / "out.json"))
    assert result.status == (1 if refused else 0), result.err
