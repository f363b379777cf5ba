"""``nemo-lens convert --to chrome``: trace-event JSON that Perfetto and chrome://tracing open."""

from __future__ import annotations

import io
import json
import os
import socket
import stat
import subprocess
import sys
import threading
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from nemo.lens import semconv
from tests.trace_file import spans_in

from .conftest import EPOCH, MS, Result, line, span_dict, write_lines

Run = Callable[..., Result]
Event = dict[str, Any]


def load(path: Path) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return document


def check_trace_event_format(document: dict[str, Any]) -> None:
    """The fields the trace-event format requires, with the types the viewers expect."""
    assert set(document) >= {"traceEvents", "displayTimeUnit"}
    assert document["displayTimeUnit"] in ("ms", "ns")
    for event in document["traceEvents"]:
        assert isinstance(event["name"], str)
        assert event["ph"] in ("X", "i", "M"), event
        assert isinstance(event["pid"], int) and isinstance(event["tid"], int)
        assert isinstance(event["args"], dict)
        if event["ph"] == "X":
            assert isinstance(event["ts"], (int, float)) and event["ts"] >= 0
            assert isinstance(event["dur"], (int, float)) and event["dur"] >= 0
            assert isinstance(event["cat"], str)
        elif event["ph"] == "i":
            assert event["s"] in ("t", "p", "g")
            assert isinstance(event["ts"], (int, float))
        else:
            assert event["name"] in (
                "process_name",
                "process_sort_index",
                "thread_name",
                "thread_sort_index",
            )


def interval(event: Event) -> tuple[int, int]:
    """The event's [start, end) in nanoseconds after the trace's origin."""
    start = round(event["ts"] * 1000)
    return start, start + round(event["dur"] * 1000)


def check_rows_nest(document: dict[str, Any]) -> None:
    """On every row, two complete events are either disjoint or one contains the other."""
    rows: dict[tuple[int, int], list[tuple[int, int]]] = defaultdict(list)
    for event in complete(document):
        rows[(event["pid"], event["tid"])].append(interval(event))
    for spans in rows.values():
        open_ends: list[int] = []
        for start, end in sorted(spans, key=lambda item: (item[0], -item[1])):
            while open_ends and open_ends[-1] <= start:
                open_ends.pop()
            assert not open_ends or end <= open_ends[-1], f"partial overlap on a row: {spans}"
            open_ends.append(end)


def check_children_inside_parents(document: dict[str, Any]) -> None:
    by_id = {event["args"]["span.id"]: event for event in complete(document)}
    checked = 0
    for event in complete(document):
        parent = by_id.get(event["args"]["span.parent_id"])
        if parent is None:
            continue
        assert parent["pid"] == event["pid"]
        (p_start, p_end), (c_start, c_end) = interval(parent), interval(event)
        assert p_start <= c_start and c_end <= p_end, (parent["name"], event["name"])
        checked += 1
    assert checked, "no parent/child pairs in the trace"


def complete(document: dict[str, Any]) -> list[Event]:
    return [event for event in document["traceEvents"] if event["ph"] == "X"]


def metadata(document: dict[str, Any], kind: str) -> dict[tuple[int, int], Any]:
    return {
        (event["pid"], event["tid"]): event["args"]
        for event in document["traceEvents"]
        if event["ph"] == "M" and event["name"] == kind
    }


def row_names(document: dict[str, Any], pid: int = 1) -> list[str]:
    names = metadata(document, "thread_name")
    order = metadata(document, "thread_sort_index")
    tids = sorted(
        (key[1] for key in names if key[0] == pid), key=lambda t: order[(pid, t)]["sort_index"]
    )
    return [names[(pid, tid)]["name"] for tid in tids]


# --- a real trace ---------------------------------------------------------------------------


def test_a_real_trace_converts_to_valid_nested_chrome_json(
    run: Run, real_trace: Callable[..., Path], tmp_path: Path
) -> None:
    trace = real_trace(steps=3)
    out = tmp_path / "out.json"

    result = run("convert", str(trace), "--to", "chrome", "-o", str(out))

    assert result.status == 0
    assert result.err == ""
    assert result.out_lines == [
        f"wrote {out}: 13 spans, 1 rank, 7 rows",
        "open it in Perfetto (https://ui.perfetto.dev, 'Open trace file') or chrome://tracing",
    ]
    document = load(out)
    check_trace_event_format(document)
    check_rows_nest(document)
    check_children_inside_parents(document)
    assert metadata(document, "process_name") == {(1, 0): {"name": "rank 0"}}
    # One row per group, in the order the groups first fired: the job on top.
    assert row_names(document) == [
        "job",
        "model_init",
        "step",
        "forward_backward",
        "optimizer",
        "checkpoint",
        "(none)",
    ]
    rows = metadata(document, "thread_name")
    for event in complete(document):
        assert rows[(event["pid"], event["tid"])]["name"] == event["cat"]
    steps = [event for event in complete(document) if event["name"] == "train.step"]
    assert [event["args"]["iteration"] for event in steps] == [1, 2, 3]
    assert semconv.SPAN_GROUP not in steps[0]["args"]  # it is the row, not an argument


def test_times_are_microseconds_from_the_first_span(
    run: Run, real_trace: Callable[..., Path], tmp_path: Path
) -> None:
    trace = real_trace(steps=1)
    records = spans_in(trace)
    out = tmp_path / "out.json"

    run("convert", str(trace), "-o", str(out))

    document = load(out)
    origin = min(record["start_time_unix_nano"] for record in records)
    assert document["otherData"]["origin_unix_nano"] == origin
    job = next(record for record in records if record["name"] == "train.job")
    (event,) = [event for event in complete(document) if event["name"] == "train.job"]
    assert event["ts"] == (job["start_time_unix_nano"] - origin) / 1000
    assert event["dur"] == (job["end_time_unix_nano"] - job["start_time_unix_nano"]) / 1000


def test_one_process_per_rank(run: Run, real_trace: Callable[..., Path], tmp_path: Path) -> None:
    rank0 = real_trace(rank=0, world_size=2, steps=1)
    rank1 = real_trace(rank=1, world_size=2, steps=1)
    out = tmp_path / "out.json"

    result = run("convert", str(rank1), str(rank0), "-o", str(out))

    assert result.out_lines[0] == f"wrote {out}: 14 spans, 2 ranks, 14 rows"
    document = load(out)
    assert metadata(document, "process_name") == {
        (1, 0): {"name": "rank 0"},
        (2, 0): {"name": "rank 1"},
    }
    assert metadata(document, "process_sort_index") == {
        (1, 0): {"sort_index": 1},
        (2, 0): {"sort_index": 2},
    }
    check_rows_nest(document)
    check_children_inside_parents(document)


# --- layout rules, on hand-made spans -------------------------------------------------------


def test_overlapping_spans_of_one_group_get_a_second_row(run: Run, tmp_path: Path) -> None:
    # Two concurrent "communication" spans overlap without nesting: one row cannot hold both.
    trace = write_lines(
        tmp_path / "t.jsonl",
        [
            line(span_dict("job", group="job", start_ms=0, end_ms=100, span_id="01" * 8)),
            line(span_dict("send", group="comm", start_ms=10, end_ms=50, parent="01" * 8)),
            line(span_dict("recv", group="comm", start_ms=30, end_ms=70, parent="01" * 8)),
            line(span_dict("send", group="comm", start_ms=80, end_ms=90, parent="01" * 8)),
        ],
    )
    out = tmp_path / "out.json"

    run("convert", str(trace), "-o", str(out))

    document = load(out)
    assert row_names(document) == ["job", "comm", "comm (2)"]
    rows = {event["name"] + str(event["ts"]): event["tid"] for event in complete(document)}
    assert rows["send10000.0"] == rows["send80000.0"] != rows["recv30000.0"]
    check_rows_nest(document)


def test_nested_spans_of_one_group_share_a_row_parent_first(run: Run, tmp_path: Path) -> None:
    # Same start and end: only the parent link tells which one is outside.
    trace = write_lines(
        tmp_path / "t.jsonl",
        [
            line(
                span_dict(
                    "inner", group="layer", start_ms=0, end_ms=5, span_id="02" * 8, parent="01" * 8
                )
            ),
            line(span_dict("outer", group="layer", start_ms=0, end_ms=5, span_id="01" * 8)),
        ],
    )
    out = tmp_path / "out.json"

    run("convert", str(trace), "-o", str(out))

    events = complete(load(out))
    assert [event["name"] for event in events] == ["outer", "inner"]
    assert events[0]["tid"] == events[1]["tid"]


def test_span_events_become_instant_events_and_errors_show_in_args(
    run: Run, tmp_path: Path
) -> None:
    event = {"name": "exception", "time_unix_nano": EPOCH + 3 * MS, "attributes": {"a": 1}}
    trace = write_lines(
        tmp_path / "t.jsonl",
        [
            line(
                span_dict(
                    "step",
                    group="step",
                    start_ms=0,
                    end_ms=5,
                    events=[event],
                    status=("ERROR", "ValueError: bad batch"),
                )
            )
        ],
    )
    out = tmp_path / "out.json"

    run("convert", str(trace), "-o", str(out))

    document = load(out)
    (span,) = complete(document)
    assert span["args"]["status"] == "ERROR: ValueError: bad batch"
    (instant,) = [item for item in document["traceEvents"] if item["ph"] == "i"]
    assert instant == {
        "name": "exception",
        "cat": "step",
        "ph": "i",
        "s": "t",
        "ts": 3000.0,
        "pid": span["pid"],
        "tid": span["tid"],
        "args": {"a": 1},
    }


# --- where the output goes ------------------------------------------------------------------


def test_the_default_output_sits_beside_the_input(
    run: Run, real_trace: Callable[..., Path]
) -> None:
    trace = real_trace(steps=1)

    result = run("convert", str(trace))

    expected = trace.with_name("trace-rank0.chrome.json")
    assert result.status == 0
    assert result.out_lines[0] == f"wrote {expected}: 7 spans, 1 rank, 7 rows"
    check_trace_event_format(load(expected))


def test_dash_writes_the_json_to_stdout_and_the_report_to_stderr(
    run: Run, real_trace: Callable[..., Path]
) -> None:
    trace = real_trace(steps=1)

    result = run("convert", str(trace), "-o", "-")

    assert result.status == 0
    check_trace_event_format(json.loads(result.out))
    assert result.err_lines[0] == "wrote standard output: 7 spans, 1 rank, 7 rows"


def test_standard_input_needs_an_explicit_output(run: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"")))

    result = run("convert", "-")

    assert result.status == 2
    assert result.err_lines[-1] == (
        "nemo-lens convert: error: reading standard input: name the output file with -o OUT "
        "(or -o -)"
    )


def test_refuses_to_overwrite_an_input(run: Run, real_trace: Callable[..., Path]) -> None:
    trace = real_trace(steps=1)
    before = trace.read_bytes()

    result = run("convert", str(trace), "-o", str(trace))

    assert result.status == 2
    assert result.err_lines[-1] == (
        f"nemo-lens convert: error: -o {trace} would overwrite an input; choose another output file"
    )
    assert trace.read_bytes() == before


def test_an_unwritable_output_is_an_error_and_leaves_nothing_behind(
    run: Run, real_trace: Callable[..., Path], tmp_path: Path
) -> None:
    trace = real_trace(steps=1)
    out = tmp_path / "missing-dir" / "out.json"

    result = run("convert", str(trace), "-o", str(out))

    assert result.status == 1
    assert result.err_lines == [
        f"nemo-lens: error: {out}: cannot be written: No such file or directory"
    ]
    assert not out.parent.exists()


def test_a_failed_write_removes_its_temporary_file(
    run: Run, real_trace: Callable[..., Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    trace = real_trace(steps=1)
    out_dir = tmp_path / "out"
    out_dir.mkdir()

    def full_disk(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("nemo.lens.cli._chrome.write_chrome_trace", full_disk)
    result = run("convert", str(trace), "-o", str(out_dir / "out.json"))

    assert result.status == 1
    assert result.err_lines == [
        f"nemo-lens: error: {out_dir / 'out.json'}: cannot be written: No space left on device"
    ]
    assert os.listdir(out_dir) == []


def test_garbled_input_writes_no_output(run: Run, tmp_path: Path) -> None:
    trace = write_lines(tmp_path / "t.jsonl", ["{not json"])
    out = tmp_path / "out.json"

    result = run("convert", str(trace), "-o", str(out))

    assert result.status == 1
    assert result.err_lines[0].startswith(f"nemo-lens: error: {trace}:1: not a JSON span record")
    assert not out.exists()


def test_an_unknown_format_is_a_usage_error(run: Run, tmp_path: Path) -> None:
    result = run("convert", str(tmp_path / "t.jsonl"), "--to", "pprof")

    assert result.status == 2
    assert "argument --to: invalid choice: 'pprof'" in result.err


# -- -o never replaces what it names -----------------------------------------------------------


def test_a_symlink_is_written_through_and_stays_a_link(
    run: Run, real_trace: Callable[..., Path], tmp_path: Path
) -> None:
    trace = real_trace(steps=1)
    target = tmp_path / "kept" / "trace.json"
    target.parent.mkdir()
    target.write_text("old")
    target.chmod(0o640)
    link = tmp_path / "latest.json"
    link.symlink_to(target)

    result = run("convert", str(trace), "-o", str(link))

    assert result.status == 0, result.err
    assert link.is_symlink() and os.readlink(link) == str(target)
    check_trace_event_format(load(target))
    assert stat.S_IMODE(target.stat().st_mode) == 0o640  # the file's permissions are kept
    assert sorted(os.listdir(target.parent)) == ["trace.json"]  # no temporary left behind


def test_a_symlink_to_an_input_is_refused_like_the_input(
    run: Run, real_trace: Callable[..., Path], tmp_path: Path
) -> None:
    trace = real_trace(steps=1)
    link = tmp_path / "alias.jsonl"
    link.symlink_to(trace)
    before = trace.read_bytes()

    result = run("convert", str(trace), "-o", str(link))

    assert result.status == 2
    assert "would overwrite an input" in result.err
    assert trace.read_bytes() == before


def test_a_fifo_is_written_to_not_replaced(
    run: Run, real_trace: Callable[..., Path], tmp_path: Path
) -> None:
    trace = real_trace(steps=1)
    fifo = tmp_path / "trace.pipe"
    os.mkfifo(fifo)
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()), daemon=True)
    reader.start()

    result = run("convert", str(trace), "-o", str(fifo))

    reader.join(10)
    assert result.status == 0, result.err
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    check_trace_event_format(json.loads(received[0]))


def test_standard_output_by_path_is_written_through(
    real_trace: Callable[..., Path], tmp_path: Path
) -> None:
    # /dev/stdout is a link through /proc to whatever fd 1 is. A link of our own
    # to the same place shows it without risking /dev's own (tests may run as root).
    trace = real_trace(steps=1)
    stdout_link = tmp_path / "stdout"
    stdout_link.symlink_to("/proc/self/fd/1")
    completed = subprocess.run(
        [sys.executable, "-m", "nemo.lens.cli", "convert", str(trace), "-o", str(stdout_link)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    assert stdout_link.is_symlink()
    document, report = completed.stdout.split("\nwrote ", 1)
    check_trace_event_format(json.loads(document))
    assert report.startswith(f"{stdout_link}: 7 spans")


def test_a_character_device_is_written_to_not_replaced(
    run: Run, real_trace: Callable[..., Path], tmp_path: Path
) -> None:
    trace = real_trace(steps=1)
    device = tmp_path / "null"
    try:
        os.mknod(device, 0o666 | stat.S_IFCHR, os.makedev(1, 3))  # what /dev/null is
    except (PermissionError, OSError) as exc:
        pytest.skip(f"cannot make a device node here: {exc}")

    result = run("convert", str(trace), "-o", str(device))

    assert result.status == 0, result.err
    assert stat.S_ISCHR(device.stat().st_mode)


def test_a_directory_or_a_socket_is_refused(
    run: Run, real_trace: Callable[..., Path], tmp_path: Path
) -> None:
    trace = real_trace(steps=1)
    directory = tmp_path / "out"
    directory.mkdir()
    result = run("convert", str(trace), "-o", str(directory))
    assert result.status == 1
    assert result.err_lines == [
        f"nemo-lens: error: {directory}: is a directory",
        "  hint: name a file to write, e.g. -o trace.chrome.json",
    ]

    path = tmp_path / "s.sock"
    with socket.socket(socket.AF_UNIX) as listening:
        listening.bind(str(path))
        result = run("convert", str(trace), "-o", str(path))
    assert result.status == 1
    assert result.err_lines[0] == f"nemo-lens: error: {path}: is a socket, not a file"
    assert stat.S_ISSOCK(path.stat().st_mode)
