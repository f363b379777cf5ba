"""``nemo-lens emit-spans``: the tree it writes, and its exit codes (COMPAT.md §3)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from nemo.lens import semconv
from nemo.lens.cli import main
from tests.trace_file import spans_in


@dataclass
class Run:
    status: int
    out: str
    err: str


@pytest.fixture
def trace_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "emitted.jsonl"
    monkeypatch.setenv("NEMO_LENS_EXPORTER", "file")
    monkeypatch.setenv("NEMO_LENS_TRACE_FILE", str(path))
    return path


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> Run:
    capsys.readouterr()
    status = main(["emit-spans", *argv])
    captured = capsys.readouterr()
    return Run(status, captured.out, captured.err)


def _records(path: Path) -> list[dict[str, Any]]:
    return spans_in(path)


def test_it_writes_the_tree_with_parents_given_in_any_order(
    trace_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = _run(
        capsys,
        "--service",
        "slurm-reckoner",
        "--span",
        "run,1767225900.000000001,1767232800,job",
        "--span",
        "step.1,1767225900.5,1767226000,run",
        "--span",
        "job,1767225600,1767232800.999999999",
        "--span",
        "queue,1767225600,1767225900,job",
    )
    assert (result.status, result.err) == (0, "")
    assert "emitted 4 spans (1 root) for service 'slurm-reckoner'" in result.out
    assert str(trace_file) in result.out

    records = {record["name"]: record for record in _records(trace_file)}
    assert sorted(records) == ["job", "queue", "run", "step.1"]
    ids = {name: record["span_id"] for name, record in records.items()}
    parents = {name: record["parent_span_id"] for name, record in records.items()}
    assert parents == {"job": None, "queue": ids["job"], "run": ids["job"], "step.1": ids["run"]}
    assert len({record["trace_id"] for record in records.values()}) == 1
    assert records["run"]["start_time_unix_nano"] == 1767225900000000001
    assert records["job"]["end_time_unix_nano"] == 1767232800999999999
    for record in records.values():
        assert record["resource"][semconv.SERVICE_NAME] == "slurm-reckoner"


def test_several_roots_are_separate_traces(
    trace_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = _run(capsys, "--service", "s", "--span", "a,1,2", "--span", "b,3,4")
    assert result.status == 0 and "(2 roots)" in result.out
    a, b = _records(trace_file)
    assert a["parent_span_id"] is None and b["parent_span_id"] is None
    assert a["trace_id"] != b["trace_id"]


def test_an_end_before_the_start_is_emitted_as_skew(
    trace_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _run(capsys, "--service", "s", "--span", "late,20,10").status == 0
    (record,) = _records(trace_file)
    assert record["attributes"][semconv.INVERTED_SKEW] is True
    assert record["start_time_unix_nano"] == record["end_time_unix_nano"]


_INVALID: dict[str, tuple[list[str], list[str]]] = {
    "too few fields": (["--span", "a,1"], ["'a,1'", "3 or 4 comma-separated fields"]),
    "too many fields": (["--span", "a,1,2,b,c"], ["'a,1,2,b,c'", "got 5 fields"]),
    "empty name": (["--span", ",1,2"], ["NAME is empty"]),
    "empty parent": (["--span", "a,1,2,"], ["PARENT is empty"]),
    "malformed start": (["--span", "a,soon,2"], ["START 'soon' is not a number"]),
    "non-finite end": (["--span", "a,1,inf"], ["END 'inf' is not a finite time"]),
    "nan start": (["--span", "a,nan,2"], ["START 'nan' is not a finite time"]),
    "duplicate name": (
        ["--span", "a,1,2", "--span", "a,3,4"],
        ["span name 'a' is given more than once"],
    ),
    "missing parent": (["--span", "a,1,2,ghost"], ["parent 'ghost', which no --span defines"]),
    "cycle": (
        ["--span", "r,1,2", "--span", "a,1,2,b", "--span", "b,1,2,a"],
        ["cycle: 'a' -> 'b' -> 'a'"],
    ),
    "own parent": (["--span", "a,1,2,a"], ["cycle: 'a' -> 'a'"]),
}


@pytest.mark.parametrize("case", sorted(_INVALID))
def test_invalid_input_emits_nothing_and_exits_1(
    case: str, trace_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    arguments, phrases = _INVALID[case]
    good = ["--span", "fine,1767225600,1767225601"]
    result = _run(capsys, "--service", "s", *good, *arguments)
    assert result.status == 1
    for phrase in phrases:
        assert phrase in result.err
    assert "nothing was emitted" in result.err
    assert result.out == ""
    assert not trace_file.exists()


def test_a_missing_service_or_span_is_invalid_input(
    trace_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = _run(capsys, "--span", "a,1,2")
    assert result.status == 1
    assert "--service NAME" in result.err
    result = _run(capsys, "--service", "s")
    assert result.status == 1
    assert "name at least one span with --span" in result.err
    assert not trace_file.exists()


def test_every_problem_is_reported_at_once(
    trace_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = _run(capsys, "--service", "s", "--span", "a,x,2", "--span", "b,1")
    assert result.status == 1
    assert "'a,x,2'" in result.err and "'b,1'" in result.err


def test_a_set_up_failure_exits_2(
    trace_file: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NEMO_LENS_EXPORTER", "zipkin")
    result = _run(capsys, "--service", "s", "--span", "a,1,2")
    assert result.status == 2
    assert "could not set up telemetry" in result.err
    assert "NEMO_LENS_EXPORTER='zipkin'" in result.err


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (Linux)")
def test_an_export_failure_exits_2(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NEMO_LENS_EXPORTER", "file")
    monkeypatch.setenv("NEMO_LENS_TRACE_FILE", "/dev/full")  # every write fails: disk full
    result = _run(capsys, "--service", "s", "--span", "a,1,2", "--span", "b,1,2,a")
    assert result.status == 2
    assert "2 of 2 spans could not be exported" in result.err
    assert result.out == ""


def test_it_is_listed_in_the_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    assert "emit-spans" in capsys.readouterr().out
    assert main(["emit-spans", "--help"]) == 0
    usage = capsys.readouterr().out
    assert "--span NAME,START,END[,PARENT]" in usage
    assert "2 set-up or export" in " ".join(usage.split())
