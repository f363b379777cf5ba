"""The trace commands towards the terminal, run as a user runs them (a child process): an
output that cannot be written, a reader that goes away, standard input on a terminal, and
text from a trace that carries escape sequences."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from nemo.lens.cli import main
from nemo.lens.cli._parser import build_parser, command_names
from tests.cli.conftest import line, span_dict, write_lines

ROOT = Path(__file__).resolve().parents[2]
NOT_A_CRASH = ("Traceback", "Exception ignored")
HOSTILE = "\x1b]0;pwned\x07"
"""An OSC sequence: a terminal that receives it raw sets its title to "pwned"."""


def nemo_lens(
    *arguments: str, stdout: Any = subprocess.PIPE, stdin: Any = subprocess.DEVNULL, **options: Any
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "nemo.lens.cli", *arguments],
        stdout=stdout,
        stdin=stdin,
        stderr=subprocess.PIPE,
        timeout=120,
        check=False,
        **options,
    )


def err_text(process: subprocess.CompletedProcess[bytes]) -> str:
    text = process.stderr.decode()
    for sign in NOT_A_CRASH:
        assert sign not in text, text
    return text


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    """One rank of a run: a job, three steps and two thousand small spans (more than a pipe
    holds, as every command prints it)."""
    records = [span_dict("job", start_ms=0, end_ms=3000, group="job", span_id="0" * 15 + "1")]
    for iteration in range(1, 4):
        start = (iteration - 1) * 1000
        records.append(
            span_dict(
                "step",
                start_ms=start,
                end_ms=start + 900,
                group="step",
                span_id=f"{iteration + 10:016x}",
                attributes={"iteration": iteration},
            )
        )
    for number in range(2000):
        records.append(
            span_dict(
                f"small.{number}",
                start_ms=number,
                end_ms=number + 0.5,
                group=f"group{number}",
                span_id=f"{number + 100:016x}",
            )
        )
    return write_lines(tmp_path / "trace.jsonl", [line(record) for record in records])


def commands(trace: Path, tmp_path: Path) -> list[tuple[str, list[str]]]:
    """Every command, with what writes standard output."""
    path = str(trace)
    return [
        ("summarize", ["summarize", path]),
        ("goodput", ["goodput", path]),
        ("goodput --json", ["goodput", "--json", path]),
        ("convert -o -", ["convert", "-o", "-", path]),
        ("convert (the report line)", ["convert", "-o", str(tmp_path / "out.json"), path]),
        ("report (the report line)", ["report", "-o", str(tmp_path / "out.html"), path]),
        ("sql", ["sql", "SELECT name, span_group FROM spans", path]),
        ("sql --format csv", ["sql", "--format", "csv", "SELECT name FROM spans", path]),
        ("sql --format json", ["sql", "--format", "json", "SELECT name FROM spans", path]),
        ("check", ["check", path]),
        ("groups", ["groups"]),
        ("--help", ["--help"]),
        ("generate --help", ["generate", "--help"]),
    ]


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (Linux)")
@pytest.mark.bad_input("stdout-full")
def test_an_output_that_cannot_be_written_is_one_line_and_exit_1(
    trace: Path, tmp_path: Path
) -> None:
    for name, arguments in commands(trace, tmp_path):
        with open("/dev/full", "wb") as full:
            process = nemo_lens(*arguments, stdout=full)
        assert process.returncode == 1, (name, process.stderr)
        assert err_text(process).splitlines()[-1] == (
            "nemo-lens: error: cannot write standard output: No space left on device"
        ), name


@pytest.mark.bad_input("stdout-closed-pipe")
def test_a_reader_that_went_away_ends_the_command_quietly_with_141(
    trace: Path, tmp_path: Path
) -> None:
    for name, arguments in commands(trace, tmp_path):
        reader, writer = os.pipe()
        os.close(reader)  # gone before the first write: `nemo-lens ... | true`
        try:
            process = nemo_lens(*arguments, stdout=writer)
        finally:
            os.close(writer)
        assert process.returncode == 141, (name, process.stderr)
        assert "error" not in err_text(process), name


@pytest.mark.bad_input("stdout-closed-pipe")
def test_a_reader_that_stops_after_a_line_ends_the_command_quietly(trace: Path) -> None:
    # convert writes event by event: the reader is gone long before the last write (one
    # write of megabytes can be taken whole by some kernels even from a closing pipe).
    child = subprocess.Popen(
        [sys.executable, "-m", "nemo.lens.cli", "convert", "-o", "-", str(trace)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert child.stdout is not None and child.stderr is not None
    assert child.stdout.readline() == b'{"traceEvents":[\n'
    child.stdout.close()  # `| head -1`
    status = child.wait(timeout=120)
    errors = child.stderr.read().decode()
    child.stderr.close()
    assert status == 141, errors
    assert errors == ""


@pytest.mark.bad_input("stdout-closed")
def test_a_closed_standard_output_is_one_line_and_exit_1(trace: Path) -> None:
    process = nemo_lens("summarize", str(trace), stdout=None, preexec_fn=lambda: os.close(1))
    assert process.returncode == 1
    assert err_text(process).splitlines() == [
        "nemo-lens: error: cannot write standard output: it is closed"
    ]


def _read_until(descriptor: int, wanted: bytes, seconds: float = 60) -> bytes:
    seen = b""
    while wanted not in seen:
        ready, _, _ = select.select([descriptor], [], [], seconds)
        assert ready, f"nothing more after {seen!r}"
        chunk = os.read(descriptor, 4096)
        assert chunk, f"ended after {seen!r}"
        seen += chunk
    return seen


@pytest.mark.bad_input("stdin-terminal")
def test_reading_a_terminal_says_what_it_waits_for(trace: Path) -> None:
    leader, follower = pty.openpty()
    child = subprocess.Popen(
        [sys.executable, "-m", "nemo.lens.cli", "summarize", "-"],
        stdin=follower,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    os.close(follower)
    try:
        assert child.stderr is not None
        notice = _read_until(child.stderr.fileno(), b"\n").decode()
        assert notice == (
            "nemo-lens: note: reading a trace from standard input, this terminal (JSON lines, "
            "a span record a line); end it with Ctrl-D, or name a file instead of -\n"
        )
        first = trace.read_text(encoding="utf-8").splitlines()[0]
        os.write(leader, first.encode() + b"\n\x04")  # one span, then Ctrl-D
        out, err = child.communicate(timeout=120)
    finally:
        os.close(leader)
    assert child.returncode == 0, err
    assert out.decode().splitlines()[0] == "rank 0 (service svc, run run1, 1 span)"


def test_standard_input_that_is_not_a_terminal_is_read_without_a_word(trace: Path) -> None:
    with trace.open("rb") as stdin:
        process = nemo_lens("summarize", "-", stdin=stdin)
    assert process.returncode == 0
    assert err_text(process) == ""


@pytest.fixture
def hostile_trace(tmp_path: Path) -> Path:
    """A trace whose names carry escape sequences (C0, DEL, C1) where a person reads them."""
    job = span_dict(
        HOSTILE,
        start_ms=0,
        end_ms=1000,
        group="job\x1b[31m",
        span_id="0" * 15 + "1",
        run="run\x9b2J\x7f",
        attributes={"note": "\x1b[2J"},
    )
    job["resource"]["service.name"] = "svc\x1b[5m"
    step = span_dict(
        "step",
        start_ms=0,
        end_ms=900,
        group="step",
        span_id="0" * 15 + "2",
        parent="0" * 15 + "1",
        run="run\x9b2J\x7f",
        attributes={"iteration": 1},
    )
    step["resource"]["service.name"] = "svc\x1b[5m"
    return write_lines(tmp_path / "hostile.jsonl", [line(job), line(step)])


def _text_commands(path: str) -> Sequence[Sequence[str]]:
    return [
        ["summarize", path],
        ["goodput", path],
        ["sql", "SELECT name, span_group, run_id, service, attributes FROM spans", path],
        ["check", path],
        # A query DuckDB refuses quotes the span's name in its message.
        ["sql", "SELECT CAST(name AS INTEGER) FROM spans WHERE name <> 'step'", path],
    ]


@pytest.mark.bad_input("trace-text-control-characters")
def test_text_from_a_trace_reaches_the_terminal_escaped(hostile_trace: Path) -> None:
    path = str(hostile_trace)
    shown = ""
    for arguments in _text_commands(path):
        process = nemo_lens(*arguments)
        out = process.stdout.decode()
        assert not re.search("[\x00-\x09\x0b-\x1f\x7f-\x9f]", out + err_text(process)), arguments
        shown += out
    assert "rank 0 (service svc\\x1b[5m, run run\\x9b2J\\x7f, 2 spans)" in shown
    assert "job\\x1b[31m" in shown
    assert "\\x1b]0;pwned\\x07" in shown


def test_escaped_cells_keep_a_table_aligned(hostile_trace: Path) -> None:
    process = nemo_lens(
        "sql", "SELECT name, span_id FROM spans ORDER BY span_id", str(hostile_trace)
    )
    header, job, step = process.stdout.decode().splitlines()
    assert job.index("0000000000000001") == header.index("span_id")
    assert step.index("0000000000000002") == header.index("span_id")


def test_data_outputs_keep_text_from_a_trace_as_it_is(hostile_trace: Path) -> None:
    path = str(hostile_trace)
    rows = nemo_lens("sql", "--format", "json", "SELECT name, run_id FROM spans", path)
    assert {"name": HOSTILE, "run_id": "run\x9b2J\x7f"} in [
        json.loads(row) for row in rows.stdout.decode().splitlines()
    ]
    csv = nemo_lens("sql", "--format", "csv", "SELECT span_group FROM spans", path)
    assert "job\x1b[31m" in csv.stdout.decode().splitlines()
    (run,) = [json.loads(row) for row in nemo_lens("goodput", "--json", path).stdout.splitlines()]
    assert run["run_id"] == "run\x9b2J\x7f"
    chrome = json.loads(nemo_lens("convert", "-o", "-", path).stdout)
    assert HOSTILE in {event.get("name") for event in chrome["traceEvents"]}


@pytest.mark.bad_input("no-command")
def test_no_command_names_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    message = capsys.readouterr().err.splitlines()[-1]
    listed = re.findall(r"[a-z][a-z-]+", message.split("name a command:")[1].split(";")[0])
    names = command_names(build_parser(["base"]))
    assert {"sql", "check", "diff-schema"} <= set(names)
    assert sorted(set(listed) - {"or"}) == sorted(names)


def test_docs_cli_synopsis_lists_every_command_and_its_links_reach_a_heading() -> None:
    page = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    synopsis = page.split("```sh\n", 1)[1].split("```", 1)[0]
    shown = [entry.split()[1] for entry in synopsis.splitlines()]
    assert shown == command_names(build_parser(["base"]))
    for target, anchor in re.findall(r"\]\(([^)#\s]*)#([^)\s]+)\)", page):
        linked = (ROOT / "docs" / target) if target else ROOT / "docs" / "cli.md"
        headings = re.findall(r"^#+ (.+)$", linked.read_text(encoding="utf-8"), re.MULTILINE)
        slugs = {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}
        assert anchor in slugs, f"docs/cli.md links to {target}#{anchor}: no such heading"
