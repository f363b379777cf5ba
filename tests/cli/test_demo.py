"""The demo job (``make demo``): its output, its trace, and the environment variables it honours.

Run in its pure-Python form (``--backend python``), as CI does: it needs no torch
and takes well under a second of training. One test runs it as a user does, in
a fresh interpreter; the others import it, which is faster.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

import pytest

from nemo.lens import semconv
from nemo.lens.cli import main as cli_main
from nemo.lens.groups import SpanGroup
from tests.trace_file import spans_in

from .conftest import Result, line, span_dict, write_lines

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "examples" / "train_demo.py"
FAST = ["--backend", "python", "--iterations", "12", "--eval-every", "4", "--checkpoint-every", "6"]


def listed(spec: str) -> str:
    """The groups a spec enables, as the demo lists them (in the schema's order)."""
    enabled = SpanGroup.resolve(spec)
    return ", ".join(g for g in SpanGroup.GROUP_INFO if g in enabled)


# What the FAST job's instrumentation records of each group it instruments, with the
# group on: 12 steps, evaluations at 4, 8 and 12, checkpoints at 6 and 12.
FAST_COUNTS = {
    "job": 1,
    "model_init": 1,
    "load_checkpoint": 1,
    "step": 12,
    "forward_backward": 12,
    "optimizer": 12,
    "evaluate": 3,
    "checkpoint": 2,
}

# The demo runs with `per_step`: what it records of the groups that preset enables.
PER_STEP_COUNTS = {g: n for g, n in FAST_COUNTS.items() if g in SpanGroup.resolve("per_step")}


def clean_environment() -> dict[str, str]:
    """os.environ without anything that configures telemetry or names the run."""
    return {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("NEMO_LENS_", "OTEL_", "WANDB_"))
        and key not in ("SLURM_JOB_ID", "TORCHELASTIC_RUN_ID")
    }


@pytest.fixture
def demo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    """The demo module, run from an empty directory with a clean environment."""
    for key in set(os.environ) - set(clean_environment()):
        monkeypatch.delenv(key)
    monkeypatch.chdir(tmp_path)
    spec = importlib.util.spec_from_file_location("train_demo", DEMO)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    # Registered first, as an import would: dataclasses look their module up by name.
    monkeypatch.setitem(sys.modules, "train_demo", module)
    spec.loader.exec_module(module)
    yield module


@pytest.fixture
def run_demo(demo: ModuleType, capsys: pytest.CaptureFixture[str]) -> Callable[..., Result]:
    def invoke(*argv: str) -> Result:
        capsys.readouterr()
        status = demo.main(list(argv))
        captured = capsys.readouterr()
        return Result(status, captured.out, captured.err)

    return invoke


def trace_path(out: str) -> Path:
    (match,) = re.findall(r"^trace: (\S+)$", out, flags=re.MULTILINE)
    return Path(match)


def summary_counts(lines: list[str]) -> dict[str, int]:
    """Group -> span count from the rows of a printed summary table."""
    rows = [line.split() for line in lines if line.startswith("  ")]
    return {row[0]: int(row[1]) for row in rows if len(row) > 2 and row[1].isdigit()}


def groups_in(path: Path) -> set[str]:
    return {span["attributes"][semconv.SPAN_GROUP] for span in spans_in(path)}


def test_make_demo_in_pure_python_prints_the_trace_and_its_summary(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(DEMO), *FAST],
        cwd=tmp_path,
        env=clean_environment(),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )

    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    lines = done.stdout.splitlines()
    expected = [
        r"nemo\.lens demo: 12 iterations on a 3-arm spiral",
        r"telemetry: file exporter, span groups 'per_step':",
        rf"  {re.escape(listed('per_step'))}",
        r"model: a pure-Python MLP \(2-16-16-3, 371 parameters; install torch for a torch "
        r"model\)",
        r"no checkpoint to resume from: starting from scratch",
        r"iteration  4/12: loss \d\.\d{4}, eval loss \d\.\d{4}, eval accuracy \d+\.\d%",
        r"iteration  6/12: checkpoint saved",
        r"iteration  8/12: loss \d\.\d{4}, eval loss \d\.\d{4}, eval accuracy \d+\.\d%",
        r"iteration 12/12: loss \d\.\d{4}, eval loss \d\.\d{4}, eval accuracy \d+\.\d%",
        r"iteration 12/12: checkpoint saved",
        r"done in \d+\.\d s; eval accuracy \d+\.\d%",
        r"trace: traces/nemo-demo-[0-9a-f]{12}-rank0\.jsonl",
        r"",
        rf"rank 0 \(service nemo-demo, run [0-9a-f]{{12}}, {sum(PER_STEP_COUNTS.values())} spans\)",
        r"  group +spans +total +mean +p50 +p99",
    ]
    for pattern, text in zip(expected, lines, strict=False):
        assert re.fullmatch(pattern, text), (pattern, text)
    table = lines[len(expected) : len(expected) + len(PER_STEP_COUNTS)]
    assert summary_counts(table) == PER_STEP_COUNTS
    assert table[0].split()[0] == "job"  # the largest total first
    trace = tmp_path / trace_path(done.stdout)
    after = lines[len(expected) + len(PER_STEP_COUNTS) :]
    assert after[0] == ""
    assert re.fullmatch(
        r"goodput \d+\.\d%: \d\.\d{3} s productive of \d\.\d{3} s wall; badput: .*", after[1]
    ), after[1]
    report = trace.with_suffix(".html")
    assert after[2] == (
        f"wrote {trace_path(done.stdout).with_suffix('.html')}: "
        f"{sum(PER_STEP_COUNTS.values())} spans; open it in a browser (it needs no network)"
    )
    assert report.read_text("utf-8").startswith("<!DOCTYPE html>")
    rest = after[3:]
    if rest[0].startswith("start-up: initialization is "):
        rest = rest[1:]  # a machine loaded enough to stretch set-up past half a second
    assert rest == [
        "",
        f"to look at it in Perfetto: {sys.executable} -m nemo.lens.cli convert --to perfetto "
        f"{trace_path(done.stdout)}"
        if not Path(sys.executable).with_name("nemo-lens").exists()
        else f"to look at it in Perfetto: {Path(sys.executable).with_name('nemo-lens')} convert "
        f"--to perfetto {trace_path(done.stdout)}",
        f"  then open {str(trace_path(done.stdout))[: -len('.jsonl')]}.pftrace at "
        "https://ui.perfetto.dev",
    ]
    assert trace.is_file()
    # The report beside the trace, and no metrics file.
    assert sorted(path.name for path in trace.parent.iterdir()) == sorted([trace.name, report.name])


def test_the_printed_summary_is_what_nemo_lens_summarize_prints(
    run_demo: Callable[..., Result], capsys: pytest.CaptureFixture[str]
) -> None:
    result = run_demo(*FAST)
    trace = trace_path(result.out)

    assert cli_main(["summarize", str(trace)]) == 0
    summary = capsys.readouterr().out
    assert summary in result.out
    assert summary_counts(summary.splitlines()) == PER_STEP_COUNTS


def test_the_hinted_conversion_works(
    run_demo: Callable[..., Result], capsys: pytest.CaptureFixture[str]
) -> None:
    trace = trace_path(run_demo(*FAST).out)

    assert cli_main(["convert", str(trace)]) == 0
    chrome = json.loads(trace.with_name(trace.stem + ".chrome.json").read_text("utf-8"))
    steps = [e for e in chrome["traceEvents"] if e["ph"] == "X" and e["cat"] == "step"]
    assert len(steps) == 12


def test_span_groups_from_the_environment_change_what_is_recorded(
    run_demo: Callable[..., Result], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NEMO_LENS_SPAN_GROUPS", "default")

    result = run_demo(*FAST)

    assert result.status == 0
    assert result.out.splitlines()[1:3] == [
        "telemetry: file exporter, span groups 'default':",
        f"  {listed('default')}",
    ]
    recorded = set(FAST_COUNTS) & SpanGroup.resolve("default")
    assert groups_in(trace_path(result.out)) == recorded
    assert summary_counts(result.out.splitlines()) == {g: FAST_COUNTS[g] for g in recorded}


def test_removing_a_group_leaves_it_out(
    run_demo: Callable[..., Result], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NEMO_LENS_SPAN_GROUPS", "per_step,-forward_backward,-optimizer")

    result = run_demo(*FAST)

    recorded = set(FAST_COUNTS) & SpanGroup.resolve("per_step")
    assert groups_in(trace_path(result.out)) == recorded - {"forward_backward", "optimizer"}


def test_telemetry_off_records_nothing(
    run_demo: Callable[..., Result], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("NEMO_LENS_ENABLED", "0")

    result = run_demo(*FAST)

    assert result.status == 0
    assert "telemetry: off" in result.out.splitlines()
    assert result.out.splitlines()[-1] == (
        "telemetry was off (NEMO_LENS_ENABLED=0): nothing was recorded"
    )
    assert not (tmp_path / "traces").exists()


def test_no_enabled_group_says_so(
    run_demo: Callable[..., Result], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NEMO_LENS_SPAN_GROUPS", "-job")

    result = run_demo(*FAST)

    assert result.status == 0
    assert result.out.splitlines()[-1] == "no span group was enabled (NEMO_LENS_SPAN_GROUPS='-job')"


def test_the_console_exporter_output_can_be_summarized(
    run_demo: Callable[..., Result],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("NEMO_LENS_EXPORTER", "console")

    result = run_demo(*FAST)

    assert result.status == 0
    assert "trace: printed above, one JSON span per line (the console exporter)" in result.out
    captured = tmp_path / "run.log"
    captured.write_text(result.out, encoding="utf-8")
    assert cli_main(["summarize", "--skip-invalid", str(captured)]) == 0
    capsys.readouterr()
    # Goodput reads the same captured output: every step of the 12 was productive.
    assert cli_main(["goodput", "--skip-invalid", "--json", str(captured)]) == 0
    (text,) = capsys.readouterr().out.splitlines()
    report = json.loads(text)
    assert 0 < report["productive_s"] < report["wall_s"]
    assert report["badput"]["wasted_progress"] == report["badput"]["restart"] == 0
    assert report["lifetimes"] == 1


def test_a_checkpoint_dir_makes_the_next_run_resume(
    run_demo: Callable[..., Result], tmp_path: Path
) -> None:
    checkpoints = tmp_path / "ckpt"
    first = run_demo(*FAST[:3], "6", "--checkpoint-dir", str(checkpoints))
    assert first.status == 0
    assert (checkpoints / "checkpoint.json").is_file()

    second = run_demo(*FAST, "--checkpoint-dir", str(checkpoints))

    assert f"resuming from {checkpoints / 'checkpoint.json'} at iteration 6" in second.out
    # The run id is kept in the directory: the resumed run adds to the first one's trace.
    assert trace_path(second.out) == trace_path(first.out)
    counts = summary_counts(second.out.splitlines())
    assert counts["step"] == 6 + 6  # iterations 1..6, then 7..12
    assert counts["load_checkpoint"] == 2

    third = run_demo(*FAST, "--checkpoint-dir", str(checkpoints))
    assert "the checkpoint is at iteration 12: nothing left to train" in third.out
    assert summary_counts(third.out.splitlines())["step"] == 12  # none added


def test_a_failure_and_a_resume_show_as_restart_and_wasted_progress(
    run_demo: Callable[..., Result], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    checkpoints = tmp_path / "ckpt"
    failed = run_demo(*FAST, "--checkpoint-dir", str(checkpoints), "--fail-at", "10")
    assert failed.status == 1
    assert failed.err == (
        "train_demo.py: simulated failure at iteration 10 (--fail-at); the spans recorded so "
        f"far were exported.\n  run again without --fail-at to resume from the checkpoint in "
        f"{checkpoints}\n"
    )
    assert "iteration  6/12: checkpoint saved" in failed.out

    resumed = run_demo(*FAST, "--checkpoint-dir", str(checkpoints))

    assert resumed.status == 0
    assert f"resuming from {checkpoints / 'checkpoint.json'} at iteration 6" in resumed.out
    (trace,) = (tmp_path / "traces").glob("*.jsonl")  # the run id was kept: one trace
    assert trace == tmp_path / trace_path(resumed.out)
    assert cli_main(["goodput", "--json", str(trace)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["lifetimes"] == 2
    assert report["badput"]["restart"] > 0
    assert report["badput"]["wasted_progress"] > 0  # iterations 7 to 10 ran twice
    steps = [
        s for s in spans_in(trace) if s["attributes"].get(semconv.SPAN_GROUP) == SpanGroup.STEP
    ]
    assert sorted(s["attributes"]["iteration"] for s in steps) == sorted(
        [*range(1, 11), *range(7, 13)]
    )
    assert [s["status"]["code"] for s in steps].count("ERROR") == 1  # the one that failed


def test_fail_at_needs_a_checkpoint_dir(
    demo: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        demo.main(["--fail-at", "3"])
    assert exit_.value.code == 2
    assert "--fail-at needs --checkpoint-dir DIR" in capsys.readouterr().err


def test_a_bad_environment_value_is_an_error_naming_the_variable(
    run_demo: Callable[..., Result], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NEMO_LENS_SPAN_GROUPS", "per_stpe")

    result = run_demo(*FAST)

    assert result.status == 2
    assert result.out == ""
    assert result.err.startswith(
        "train_demo.py: error: NEMO_LENS_SPAN_GROUPS='per_stpe': invalid span_groups "
        "'per_stpe': unknown span group or preset 'per_stpe' for SpanGroup (Unknown span "
        "group or preset: 'per_stpe'); did you mean 'per_step'?"
    )


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--iterations", "0"], "argument --iterations: 0 is not positive; use 1 or more"),
        (["--eval-every", "ten"], "argument --eval-every: 'ten' is not a whole number"),
        (["--backend", "jax"], "argument --backend: invalid choice: 'jax'"),
    ],
)
def test_bad_options_are_usage_errors(
    demo: ModuleType, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    with pytest.raises(SystemExit) as exit_:
        demo.main(argv)

    assert exit_.value.code == 2
    assert message in capsys.readouterr().err


def test_asking_for_torch_without_torch_says_how_to_install_it(
    demo: ModuleType, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(demo, "_torch_available", lambda: False)

    with pytest.raises(SystemExit) as exit_:
        demo.main(["--backend", "torch"])

    assert exit_.value.code == 2
    assert (
        "--backend torch: torch is not installed; install a CPU build with pip install "
        "torch==2.13.0, or use --backend python"
    ) in capsys.readouterr().err


def test_auto_picks_pure_python_when_torch_is_missing(
    demo: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(demo, "_torch_available", lambda: False)

    assert demo.parse_options([]).backend == "python"


def test_the_torch_backend_trains_a_torch_model(run_demo: Callable[..., Result]) -> None:
    pytest.importorskip("torch")

    result = run_demo("--backend", "torch", "--iterations", "4", "--eval-every", "2")

    assert result.status == 0
    assert re.search(
        r"^model: a torch \S+ MLP \(2-128-128-3, 17283 parameters\) on the CPU$",
        result.out,
        flags=re.MULTILINE,
    )
    counts = summary_counts(result.out.splitlines())
    assert counts["step"] == 4
    assert counts["evaluate"] == 2


def test_exporter_none_says_nothing_was_exported(
    run_demo: Callable[..., Result], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("NEMO_LENS_EXPORTER", "none")

    result = run_demo(*FAST)

    assert result.status == 0
    assert result.out.splitlines()[-1] == (
        "trace: created but not exported (NEMO_LENS_EXPORTER=none)"
    )
    assert not (tmp_path / "traces").exists()


def test_ctrl_c_keeps_the_spans_recorded_so_far(
    demo: ModuleType,
    run_demo: Callable[..., Result],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    real = demo.PythonTrainer.forward_backward

    def interrupted_at_3(self: object, iteration: int) -> float:
        if iteration == 3:
            raise KeyboardInterrupt
        loss: float = real(self, iteration)
        return loss

    monkeypatch.setattr(demo.PythonTrainer, "forward_backward", interrupted_at_3)

    result = run_demo(*FAST)

    assert result.status == 130
    assert result.err == "interrupted; the spans recorded so far were exported\n"
    (trace,) = (tmp_path / "traces").glob("*.jsonl")
    names = [span["name"] for span in spans_in(trace)]
    assert names.count("train.step") == 3  # two finished, and the one interrupted
    assert names.count("train.job") == 1


def start_up_trace(path: Path, start_up_ms: float, steps: int) -> str:
    """A job: *start_up_ms* of model set-up, then *steps* steps of 10 ms."""
    spans = [
        span_dict("train.job", start_ms=0, end_ms=start_up_ms + 10 * steps, group="job"),
        span_dict("train.model_init", start_ms=0, end_ms=start_up_ms, group="model_init"),
    ]
    spans += [
        span_dict(
            "train.step",
            start_ms=start_up_ms + 10 * i,
            end_ms=start_up_ms + 10 * (i + 1),
            group="step",
            attributes={"iteration": i + 1},
        )
        for i in range(steps)
    ]
    return str(write_lines(path, [line(span) for span in spans]))


@pytest.mark.bad_input("demo-start-up-dominates")
def test_a_start_up_that_dominates_a_short_run_is_explained_in_one_line(
    demo: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    options = demo.parse_options(["--backend", "python", "--iterations", "12"])
    console = demo.Console(12, enabled=False)
    # 1 s of start-up before 12 steps of 10 ms: goodput 11%, most of the run set-up.
    demo.explain_start_up(console, start_up_trace(tmp_path / "slow.jsonl", 1000, 12), options)
    (said,) = capsys.readouterr().out.splitlines()
    # 1,200 steps of 10 ms after the same second: 12 s productive of 13 s.
    assert said == (
        "start-up: initialization is 1.0 s of this 1.1 s run, paid once; at this pace "
        f"1,200 steps would be {12 / 13:.1%} goodput"
    )
    # A start-up that is a small share of the run needs no word, nor does a short one (a
    # pure-Python demo's, stretched by a loaded machine to 29% of its run).
    demo.explain_start_up(console, start_up_trace(tmp_path / "fast.jsonl", 5, 12), options)
    demo.explain_start_up(console, start_up_trace(tmp_path / "short.jsonl", 50, 12), options)
    assert capsys.readouterr().out == ""
