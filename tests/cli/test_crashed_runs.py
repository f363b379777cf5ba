"""Reading trace format 2: a lifetime's header, its spans, and spans its process left open.

docs/trace-format.md: the ``file`` exporter writes a lifetime's resource once,
in a header, records ``goodput`` spans still open, and says when the lifetime
is alive. A process killed with such spans open leaves their open records and
no end; the commands end them at the lifetime's last recorded instant, marked
truncated, and goodput counts the step that never finished as wasted. Hand-made
lines (exact times) here; real killed processes in tests/reliability.
"""

from __future__ import annotations

import json
import os
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from nemo.lens import NemoLensConfig, managed_span, semconv, setup_telemetry
from nemo.lens.groups import SpanGroup
from tests.cli.conftest import EPOCH, MS, Result, line, span_dict, write_lines
from tests.cpu_waits import CpuWaits
from tests.trace_file import records_in

Run = Callable[..., Result]

LIFETIME = "0123456789abcdef"
RESOURCE = {"service.name": "svc", "nemo.run_id": "run1", "nemo.rank": 0}
GOODPUT = {semconv.SPAN_CATEGORY: "goodput"}


def header(lifetime: str = LIFETIME, version: int = 2) -> str:
    return line(
        {"trace_format": version, "lifetime": lifetime, "writer": "test", "resource": RESOURCE}
    )


def finished(record: dict[str, Any], lifetime: str = LIFETIME) -> str:
    """A format-1 span record as format 2 writes it: its lifetime instead of its resource."""
    record = dict(record)
    del record["resource"]
    return line({**record, "lifetime": lifetime})


def still_open(record: dict[str, Any], open_at_ms: float, lifetime: str = LIFETIME) -> str:
    """The open record of a span: its start and attributes, when it was seen open."""
    kept = ("name", "trace_id", "span_id", "parent_span_id", "kind", "start_time_unix_nano")
    return line(
        {
            **{key: record[key] for key in kept},
            "open_at_unix_nano": EPOCH + round(open_at_ms * MS),
            "attributes": record["attributes"],
            "scope": record["scope"],
            "lifetime": lifetime,
        }
    )


def alive(at_ms: float, lifetime: str = LIFETIME) -> str:
    return line({"lifetime": lifetime, "alive_at_unix_nano": EPOCH + round(at_ms * MS)})


def _step(iteration: int, start_ms: float, end_ms: float, span_id: str) -> dict[str, Any]:
    return span_dict(
        "train.step",
        start_ms=start_ms,
        end_ms=end_ms,
        group=SpanGroup.STEP,
        span_id=span_id,
        parent="00000000000000a0",
        attributes={"iteration": iteration, **GOODPUT},
    )


def killed_in_step_2() -> list[str]:
    """A lifetime killed in its second step: the job and the step open, then silence."""
    job = span_dict(
        "train.job",
        start_ms=0,
        end_ms=0,
        group=SpanGroup.JOB,
        span_id="00000000000000a0",
        attributes=GOODPUT,
    )
    inner = span_dict(
        "train.forward_backward",
        start_ms=100,
        end_ms=150,
        group=SpanGroup.FORWARD_BACKWARD,
        span_id="00000000000000c1",
        parent="00000000000000b2",
    )
    return [
        header(),
        still_open(job, open_at_ms=30),
        finished(_step(1, 0, 100, "00000000000000b1")),
        still_open(_step(2, 100, 100, "00000000000000b2"), open_at_ms=130),
        finished(inner),
        alive(1000),  # the last record: nothing after this instant is known
    ]


def _goodput(run: Run, path: Path) -> dict[str, Any]:
    result = run("goodput", "--json", str(path))
    assert result.status == 0, result.err
    loaded: dict[str, Any] = json.loads(result.out)
    return loaded


@pytest.mark.bad_input("trace-of-running-job")
def test_spans_a_killed_process_left_open_end_at_its_last_record_marked_truncated(
    run: Run, tmp_path: Path
) -> None:
    path = write_lines(tmp_path / "killed.jsonl", killed_in_step_2())

    summary = run("summarize", str(path))
    assert summary.status == 0, summary.err
    assert summary.out_lines[1:4] == [
        "  group             spans     total       mean        p50        p99",
        "  job                   1    1.00 s     1.00 s     1.00 s     1.00 s",
        "  step                  2    1.00 s  500.00 ms  500.00 ms  892.00 ms",
    ]
    assert summary.err_lines == [
        "nemo-lens: note: 2 spans never ended: they were open when the trace was read (the "
        "job may still be running, or it was killed or crashed); read as ending at their "
        "process lifetime's last record, marked nemo.span.truncated"
    ]
    # The step that never finished trained nothing: wasted, though nothing ran it again.
    report = _goodput(run, path)
    assert report["productive_s"] == 0.1
    assert report["badput"]["wasted_progress"] == 0.9
    assert report["wall_s"] == 1.0

    chrome = tmp_path / "killed.chrome.json"
    assert run("convert", str(path), "-o", str(chrome)).status == 0
    steps = [
        e for e in json.loads(chrome.read_text())["traceEvents"] if e.get("name") == "train.step"
    ]
    crashed = next(e for e in steps if e["args"].get("iteration") == 2)
    assert crashed["args"][semconv.SPAN_TRUNCATED] is True
    assert crashed["dur"] == 900_000  # microseconds: from its start to the last record


def test_the_records_pair_up_in_any_order(run: Run, tmp_path: Path) -> None:
    # What a SQL engine may do, and what a forked writer or a merged file does: no
    # record's meaning depends on where it is, the header's neither.
    lines = killed_in_step_2()
    expected = _goodput(run, write_lines(tmp_path / "ordered.jsonl", lines))
    for seed in range(5):
        shuffled = lines[:]
        random.Random(seed).shuffle(shuffled)
        path = write_lines(tmp_path / f"shuffled{seed}.jsonl", shuffled)
        assert _goodput(run, path) == expected, shuffled
    # A span's line read before its open record still closes it.
    step = _step(7, 0, 50, "00000000000000d7")
    pair = [header(), finished(step), still_open(step, open_at_ms=40)]
    result = run("summarize", str(write_lines(tmp_path / "pair.jsonl", pair)))
    assert result.err == "" and "  step       1  50.00 ms" in result.out


def test_a_file_of_both_formats_reads_each_lifetime_its_own_way(run: Run, tmp_path: Path) -> None:
    # The file exporter appends: an old process's format-1 lines, then a resumed one's,
    # which ran iteration 1 again and was killed in iteration 2.
    old = span_dict("train.step", start_ms=-2000, end_ms=-1900, group=SpanGroup.STEP,
                    span_id="00000000000000e1", attributes={"iteration": 1})  # fmt: skip
    path = write_lines(tmp_path / "mixed.jsonl", [line(old), *killed_in_step_2()])
    report = _goodput(run, path)
    assert report["lifetimes"] == 2
    assert report["badput"]["restart"] == 1.9
    assert report["badput"]["wasted_progress"] == 1.0  # the old iteration 1, the new 2
    assert report["productive_s"] == 0.1


def test_a_newer_format_is_an_error_that_says_what_to_do(run: Run, tmp_path: Path) -> None:
    path = write_lines(tmp_path / "future.jsonl", [header(version=3), *killed_in_step_2()[1:]])
    result = run("summarize", str(path))
    assert result.status == 1
    assert result.err_lines == [
        f"nemo-lens: error: {path}:1: written in trace format 3; this nemo-lens reads formats "
        "up to 2",
        "  hint: upgrade nemo-lens (pip install -U nemo-lens) to read this trace",
    ]


@pytest.mark.parametrize(
    ("record", "message"),
    [
        ({"lifetime": LIFETIME}, "not a span record: a JSON object without 'start_time_unix_nano'"),
        ({"lifetime": 7, "alive_at_unix_nano": EPOCH}, "'lifetime' must be a non-empty string"),
        ({"trace_format": "2", "lifetime": LIFETIME}, "header field 'trace_format' must be"),
        ({"trace_format": 2, "lifetime": ""}, "header field 'lifetime' must be a non-empty string"),
    ],
)
def test_a_malformed_record_names_its_line(
    run: Run, tmp_path: Path, record: dict[str, Any], message: str
) -> None:
    path = write_lines(tmp_path / "bad.jsonl", [header(), line(record)])
    result = run("summarize", str(path))
    assert result.status == 1
    assert result.err_lines[0].startswith(f"nemo-lens: error: {path}:2: {message}")


def test_a_normal_shutdown_leaves_no_span_to_reconstruct(run: Run, tmp_path: Path) -> None:
    path = tmp_path / "clean.jsonl"
    handle = setup_telemetry(
        NemoLensConfig(
            enabled=True,
            exporter="file",
            trace_file=str(path),
            span_groups="all",
            metrics_enabled=False,
        )
    )
    waits = CpuWaits(os.getpid(), every_s=None)
    with managed_span(SpanGroup.JOB, "train.job"), managed_span(SpanGroup.STEP, "train.step"):
        # Long enough for the open records to be written, in the time the machine gave
        # this process (on a busy one, longer by its delay).
        waits.wait_until_ran(waits.sample(), 0.15)
    assert handle.shutdown() is True
    records = records_in(path)
    opened = {r["span_id"] for r in records if "open_at_unix_nano" in r}
    ended = {r["span_id"] for r in records if "end_time_unix_nano" in r}
    assert len(opened) == 2 and opened <= ended  # the job and the step: each has its end
    result = run("summarize", str(path))
    assert result.status == 0 and result.err == ""  # nothing reconstructed
    report = _goodput(run, path)
    assert report["badput"]["wasted_progress"] == 0.0
