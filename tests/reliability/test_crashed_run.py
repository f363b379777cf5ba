"""A run killed in a step and resumed from its checkpoint, as the commands tell it.

The first lifetime is killed by SIGKILL in iteration 13 (the checkpoint was at
10); the second resumes at 11 and finishes. What a user reads from the one
trace file: the job and the step the kill cut short, ended where the first
lifetime's records stop and marked truncated; goodput counting that step as
wasted progress at once, before any resume ran it again, and iterations 11 and
12 too once one did; the time between the lifetimes as restart.
"""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from nemo.lens import semconv
from nemo.lens.cli import main
from tests.cpu_waits import CpuWaits
from tests.reliability.conftest import RunningJob, run_job
from tests.trace_file import spans_in

BOUND_S = 0.1
"""The file exporter's promise: what a kill leaves unwritten ended within this."""

_TRAIN = """
from nemo.lens import NemoLensConfig, managed_span, setup_telemetry

first, last, crash_at = (int(value) for value in sys.argv[1:4])
handle = setup_telemetry(NemoLensConfig.from_env())
with managed_span("job", "train.job"):
    for iteration in range(first, last + 1):
        with managed_span("step", "train.step", iteration=iteration) as step:
            if iteration == crash_at:
                report(crashed_step_started=step.start_time)
                print("IN THE STEP", flush=True)
                while True:  # a step that hangs: work the kill will cut short
                    with managed_span("forward_backward", "train.forward_backward"):
                        time.sleep(0.01)
            with managed_span("forward_backward", "train.forward_backward"):
                time.sleep(0.005)
        if iteration % 10 == 0:
            with managed_span("checkpoint", "train.checkpoint"):
                time.sleep(0.01)
handle.shutdown()
"""


def _env(path: Path) -> dict[str, str]:
    return {
        "NEMO_LENS_ENABLED": "1",
        "NEMO_LENS_EXPORTER": "file",
        "NEMO_LENS_TRACE_FILE": str(path),
        "NEMO_LENS_SPAN_GROUPS": "per_step",
        "NEMO_LENS_METRICS_ENABLED": "0",
        "NEMO_LENS_RUN_ID": "crashed-run",
    }


@pytest.fixture
def command(capsys: pytest.CaptureFixture[str]) -> Callable[..., tuple[int, str, str]]:
    def invoke(*argv: str) -> tuple[int, str, str]:
        capsys.readouterr()
        status = main(list(argv))
        captured = capsys.readouterr()
        return status, captured.out, captured.err

    return invoke


def _duration_s(span: dict[str, Any]) -> float:
    nanoseconds: int = span["end_time_unix_nano"] - span["start_time_unix_nano"]
    return nanoseconds / 1e9


def test_a_killed_and_resumed_run_shows_the_crash_as_wasted_progress_and_restart(
    tmp_path: Path, command: Callable[..., tuple[int, str, str]]
) -> None:
    path = tmp_path / "trace.jsonl"
    first = RunningJob(_TRAIN, "1", "20", "13", env=_env(path))
    first.wait_for("IN THE STEP")
    waits = CpuWaits(first.process.pid)
    try:
        # 0.3 s of the step in the job's own time: the machine's delay does not count.
        waits.wait_until_ran(waits.sample(), 0.3)
        # Stopped, then killed: the machine's delay is known up to the stop, and nothing
        # is recorded after it.
        kill_sent_ns = waits.stop()
        killed_ns = time.time_ns()
        first.process.send_signal(signal.SIGKILL)
    finally:
        waits.close()
    killed = first.finish()
    assert killed.returncode == -signal.SIGKILL
    crashed_started = killed.result["crashed_step_started"]

    # Before any resume: the step that never finished is wasted progress already.
    status, out, err = command("goodput", "--json", str(path))
    assert status == 0, err
    alone = json.loads(out)
    assert "2 spans never ended" in err  # the job and the step
    wasted = alone["badput"]["wasted_progress"]
    assert wasted <= (killed_ns - crashed_started) / 1e9
    # The step ends at the lifetime's last record, which the file exporter's bound (and
    # a 10 ms span's end) keep near the kill, in the time the machine gave the job.
    last_record_ns = crashed_started + round(wasted * 1e9)
    assert waits.ran_ns(last_record_ns, kill_sent_ns) <= (BOUND_S + 0.02) * 1e9

    resumed = run_job(_TRAIN, "11", "20", "0", env=_env(path))
    assert resumed.returncode == 0, resumed.stderr

    status, out, err = command("goodput", "--json", str(path))
    assert status == 0, err
    report = json.loads(out)
    assert report["lifetimes"] == 2
    assert report["badput"]["restart"] > 0
    finished_then_redone = sum(
        _duration_s(span)
        for span in spans_in(path)
        if span["name"] == "train.step"
        and span["attributes"]["iteration"] in (11, 12)
        and span["start_time_unix_nano"] < killed_ns
    )
    assert report["badput"]["wasted_progress"] == pytest.approx(
        finished_then_redone + wasted, abs=1e-6
    )

    status, out, err = command("summarize", str(path))
    assert status == 0, err
    assert any(row.split()[:2] == ["job", "2"] for row in out.splitlines())  # one a lifetime

    chrome = tmp_path / "trace.chrome.json"
    status, _, _ = command("convert", str(path), "-o", str(chrome))
    assert status == 0
    cut_short = [
        event["args"]
        for event in json.loads(chrome.read_text())["traceEvents"]
        if event.get("name") == "train.step" and semconv.SPAN_TRUNCATED in event.get("args", {})
    ]
    assert [args["iteration"] for args in cut_short] == [13]

    status, out, _ = command("report", str(path), "-o", str(tmp_path / "trace.html"))
    assert status == 0
    assert f"wasted_progress {report['badput']['wasted_progress']:.3f} s" in out
