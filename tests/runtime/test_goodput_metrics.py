"""The live goodput recorder: at the end of a run its metrics equal ``nemo-lens goodput`` on
the run's trace; its windows on a synthetic clock; its watermark; its bad input."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from nemo.lens import NemoLensConfig, emit_span, managed_span, semconv, setup_telemetry
from nemo.lens._sdk.goodput import GoodputRecorder, group_buckets
from nemo.lens.cli import main
from nemo.lens.consumers.megatron import MegatronSpanGroup
from nemo.lens.groups import SpanGroup
from tests.metric_data import metrics_by_name

S = 1_000_000_000
BUCKETS = group_buckets()


def metric_points(reader: InMemoryMetricReader) -> dict[str, dict[tuple[Any, ...], float]]:
    """``{metric: {sorted attribute items: value}}`` of the goodput instruments."""
    return {
        name: {
            tuple(sorted((point.attributes or {}).items())): point.value  # type: ignore[union-attr]
            for point in metric.data.data_points
        }
        for name, metric in metrics_by_name(reader).items()
        if name.startswith("nemo.goodput.")
    }


def goodput_json(trace: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    capsys.readouterr()
    assert main(["goodput", "--json", str(trace)]) == 0
    (rank,) = json.loads(capsys.readouterr().out)["ranks"]
    return rank  # type: ignore[no-any-return]


Job = Callable[[Callable[[], object]], None]


def run_job(
    tmp_path: Path, job: Job, span_group_cls: type[SpanGroup] = SpanGroup
) -> tuple[InMemoryMetricReader, Path]:
    """Run *job* instrumented (``file`` exporter, the recorder on), then shut down. *job* is
    given a collection of the metrics to make (live figures, time made final)."""
    reader = InMemoryMetricReader()
    trace = tmp_path / "trace.jsonl"
    config = NemoLensConfig(
        enabled=True,
        exporter="file",
        span_groups="all",
        span_group_cls=span_group_cls,
        export_strategy="all_ranks",
        run_id="live",
        trace_file=str(trace),
        goodput_metrics="1",
    )
    handle = setup_telemetry(config, metric_reader=reader, _allow_reinit=True)
    with contextlib.ExitStack() as left_open:
        job_span = left_open.enter_context(managed_span(SpanGroup.JOB, "job"))
        try:
            job(reader.get_metrics_data)
        finally:
            handle.shutdown()
        assert job_span is not None and not job_span.is_recording()  # shutdown ended it
    return reader, trace


def steps(*iterations: int, inside: Callable[[int], None] | None = None) -> None:
    for iteration in iterations:
        with managed_span(SpanGroup.STEP, "step", iteration=iteration):
            with managed_span(SpanGroup.FORWARD_BACKWARD, "fb"):
                pass
            if inside is not None:
                inside(iteration)


def checkpoint(_: int = 0) -> None:
    with managed_span(SpanGroup.CHECKPOINT, "save"):
        pass


def steps_only(collect: Callable[[], object]) -> None:
    steps(1, 2, 3)


def checkpoint_inside_a_step(collect: Callable[[], object]) -> None:
    steps(1, 2, inside=checkpoint)
    collect()
    steps(3, inside=checkpoint)


def evaluate(collect: Callable[[], object]) -> None:
    with managed_span(SpanGroup.MODEL_INIT, "init"):
        pass
    steps(1)
    with managed_span(SpanGroup.EVALUATE, "eval"):
        steps(99)  # evaluation's own steps: the innermost span wins
    steps(2)


_left_open: list[Any] = []


def truncated_at_shutdown(collect: Callable[[], object]) -> None:
    steps(1, 2)
    collect()
    # Still open when shutdown comes: shutdown ends it, truncated, as wasted progress.
    _left_open.append(managed_span(SpanGroup.STEP, "step", iteration=3).__enter__())


def an_iteration_executed_twice(collect: Callable[[], object]) -> None:
    steps(1, 2, 3)
    collect()  # 2 and 3 counted productive so far; their re-execution moves them
    steps(2, 3, 4)


def two_threads_overlapping(collect: Callable[[], object]) -> None:
    started = threading.Event()

    def saver() -> None:
        with managed_span(SpanGroup.CHECKPOINT, "async save"):
            started.set()
            steps(50, 51)  # inside the save: its own thread's steps

    thread = threading.Thread(target=saver)
    with managed_span(SpanGroup.STEP, "step", iteration=1):
        thread.start()
        started.wait()
        collect()  # the step and the save open: nothing after the step's start is final
        steps(2)
    thread.join()
    steps(3)


def a_span_that_arrives_late(collect: Callable[[], object]) -> None:
    steps(1, 2)
    with managed_span(SpanGroup.STEP, "step", iteration=3) as step:
        start = step.start_time  # type: ignore[union-attr]
    collect()
    # A save reported afterwards, from before the last step to beyond it (emit_span: an
    # already-finished span, handed over after the time it covers was made final).
    emit_span(
        trace.get_tracer("test"),
        "late save",
        start / 1e9 - 0.001,
        start / 1e9 + 0.2,
        group=SpanGroup.CHECKPOINT,
    )
    steps(4)


def iterations_that_are_not_whole_numbers(collect: Callable[[], object]) -> None:
    # Not iterations (a flag, a fraction, a word): productive, never a re-execution; a
    # string or float holding a whole number is one, and runs again here.
    for iteration in (True, 2.5, "abc", " 7 ", 7.0, True, 2.5, "abc"):
        with managed_span(SpanGroup.STEP, "step", iteration=iteration):
            pass
        collect()


def start_up_data_loading_and_a_slow_step(collect: Callable[[], object]) -> None:
    # Start-up: the time before the first step that model_init does not cover; data loading
    # inside the steps; one step far slower than the others (its excess is anomalous).
    with managed_span(SpanGroup.MODEL_INIT, "init"):
        pass
    time.sleep(0.002)  # uncovered, before the first step: start-up

    def load(iteration: int) -> None:
        with managed_span(MegatronSpanGroup.DATA_LOADING, "batch"):
            pass
        if iteration == 5:
            time.sleep(0.05)  # the slow step

    steps(*range(1, 12), inside=load)
    collect()
    steps(12, 13, inside=load)


CASES = {
    "steps-only": steps_only,
    "checkpoint-inside-a-step": checkpoint_inside_a_step,
    "evaluate": evaluate,
    "truncated-at-shutdown": truncated_at_shutdown,
    "iteration-executed-twice": an_iteration_executed_twice,
    "two-threads-overlapping": two_threads_overlapping,
    "a-span-that-arrives-late": a_span_that_arrives_late,
    "iterations-that-are-not-whole-numbers": iterations_that_are_not_whole_numbers,
    "start-up-data-loading-and-a-slow-step": start_up_data_loading_and_a_slow_step,
}


@pytest.mark.parametrize("case", list(CASES))
def test_the_figures_at_the_end_of_a_run_equal_nemo_lens_goodput(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Megatron's vocabulary has the data_loading bucket.
    cls = MegatronSpanGroup if case == "start-up-data-loading-and-a-slow-step" else SpanGroup
    reader, trace = run_job(tmp_path, CASES[case], cls)

    points = metric_points(reader)
    expected = goodput_json(trace, capsys)
    by_bucket = {
        dict(key)[semconv.GOODPUT_BUCKET]: value
        for key, value in points[semconv.GOODPUT_TIME].items()
    }
    assert by_bucket.pop("productive") == expected["productive_s"]
    badput = dict(expected["badput"])
    assert badput.pop("restart") == 0.0  # one lifetime
    assert by_bucket == badput
    assert points[semconv.GOODPUT_RATIO][()] == expected["goodput"]
    if case in (
        "truncated-at-shutdown",
        "iteration-executed-twice",
        "iterations-that-are-not-whole-numbers",
    ):
        assert by_bucket["wasted_progress"] > 0
    if case in ("checkpoint-inside-a-step", "two-threads-overlapping", "a-span-that-arrives-late"):
        assert by_bucket["checkpoint_save"] > 0
    if case == "evaluate":
        assert by_bucket["evaluation"] > 0 and by_bucket["initialization"] > 0
    if case == "start-up-data-loading-and-a-slow-step":
        assert by_bucket["startup"] > 0 and by_bucket["data_loading"] > 0
        assert by_bucket["anomalous_steps"] > 0 and by_bucket["recovery"] == 0


# -- on a synthetic clock -------------------------------------------------------------------


@dataclass
class FakeSpan:
    """What the recorder reads of an ended span."""

    start_time: int
    end_time: int
    attributes: dict[str, Any] = field(default_factory=dict)


def span(group: str, start_s: float, end_s: float, **attributes: Any) -> FakeSpan:
    return FakeSpan(int(start_s * S), int(end_s * S), {semconv.SPAN_GROUP: group, **attributes})


@dataclass
class FakeTracker:
    open: dict[object, Any] = field(default_factory=dict)


@pytest.fixture
def clock() -> Iterator[list[int]]:
    yield [0]


def recorder(clock: list[int], tracker: FakeTracker | None = None) -> GoodputRecorder:
    return GoodputRecorder(
        tracker=tracker, windows_s=(60, 300), clock=lambda: clock[0], buckets=BUCKETS
    )


def test_rolling_windows_take_only_the_last_seconds(clock: list[int]) -> None:
    live = recorder(clock)
    # 10 min of 30 s steps, then 5 min of checkpointing, then 1 min idle.
    for n in range(20):
        live.observe(span(SpanGroup.STEP, 30 * n, 30 * n + 30, iteration=n))
    live.observe(span(SpanGroup.CHECKPOINT, 600, 900))
    live.observe(span(SpanGroup.JOB, 0, 960))
    clock[0] = 960 * S
    live.drain()

    length, last_minute = live.window(60)
    assert length == 60 * S
    assert last_minute["checkpoint_save"] == 0 and last_minute["unaccounted"] == 60 * S
    length, last_5 = live.window(300)
    assert length == 300 * S
    assert last_5["checkpoint_save"] == 240 * S and last_5["unaccounted"] == 60 * S
    assert last_5["productive"] == 0
    wall, buckets = live.figures()
    assert wall == 960 * S
    assert buckets["productive"] == 600 * S and buckets["checkpoint_save"] == 300 * S


def test_time_is_final_only_up_to_the_earliest_open_bucketed_span(clock: list[int]) -> None:
    open_step = span(SpanGroup.STEP, 100, 0, iteration=5)
    open_job = span(SpanGroup.JOB, 0, 0)  # transparent: holds nothing back
    tracker = FakeTracker({1: open_step, 2: open_job})
    live = recorder(clock, tracker)
    live.observe(span(SpanGroup.STEP, 0, 50, iteration=1))
    live.observe(span(SpanGroup.CHECKPOINT, 60, 110))  # ended inside the open step
    clock[0] = 200 * S
    live.drain()

    wall, buckets = live.figures()
    assert wall == 100 * S  # final up to the open step's start
    assert buckets["checkpoint_save"] == 40 * S  # 60..100 so far

    del tracker.open[1]
    live.observe(span(SpanGroup.STEP, 100, 150, iteration=5))
    live.drain()
    wall, buckets = live.figures()
    assert wall == 200 * S
    # The step started after the save: 100..110 is the step's (the innermost span).
    assert buckets["checkpoint_save"] == 40 * S
    assert buckets["productive"] == 50 * S + 50 * S
    assert live.window(60)[1]["productive"] == 10 * S  # 140..200 holds 140..150


def test_an_iteration_run_again_moves_its_time_to_wasted_progress(clock: list[int]) -> None:
    live = recorder(clock)
    live.observe(span(SpanGroup.STEP, 0, 10, iteration=7))
    clock[0] = 20 * S
    live.drain()
    assert live.figures()[1]["productive"] == 10 * S
    live.observe(span(SpanGroup.STEP, 20, 30, iteration="7"))  # a string holding it
    clock[0] = 40 * S
    live.drain()
    buckets = live.figures()[1]
    assert buckets["productive"] == 10 * S and buckets["wasted_progress"] == 10 * S
    assert live.window(60)[1]["wasted_progress"] == 10 * S


def test_spans_that_feed_no_bucket_only_widen_the_wall_time(clock: list[int]) -> None:
    live = recorder(clock)
    live.observe(span(SpanGroup.STEP, 0, 10, **{semconv.SPAN_CATEGORY: "profiling"}))
    live.observe(span("not-a-group", 10, 20))
    live.observe(FakeSpan(20 * S, 30 * S, {semconv.SPAN_GROUP: 3}))  # not a name
    live.observe(span(SpanGroup.STEP, 30, 25))  # ends before it starts: covers nothing
    live.close()
    wall, buckets = live.figures()
    assert wall == 30 * S
    assert buckets["unaccounted"] == 30 * S and buckets["productive"] == 0


# -- bad input --------------------------------------------------------------------------------


@pytest.mark.bad_input("goodput-metrics-not-windows")
@pytest.mark.parametrize("raw", ["abc", "60,0", "60,-5", "1.5", "60,,300"])
def test_goodput_metrics_that_names_no_windows_is_refused(
    raw: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NEMO_LENS_GOODPUT_METRICS", raw)
    with pytest.raises(ValueError) as caught:
        NemoLensConfig.from_env()
    message = str(caught.value)
    assert message.startswith(f"NEMO_LENS_GOODPUT_METRICS={raw!r}: ")
    assert "is not a window in whole seconds" in message
    assert "60,300,900" in message
    with pytest.raises(ValueError, match="is not a window in whole seconds"):
        NemoLensConfig(goodput_metrics=raw)


@pytest.mark.parametrize(
    ("raw", "windows"),
    [("1", (60, 300, 900)), ("on", (60, 300, 900)), ("900,60", (60, 900)), ("0", ()), ("", ())],
)
def test_goodput_metrics_values(raw: str, windows: tuple[int, ...]) -> None:
    from nemo.lens.config import goodput_windows

    assert goodput_windows(NemoLensConfig(goodput_metrics=raw).goodput_metrics) == windows


def test_off_by_default_nothing_is_recorded(tmp_path: Path) -> None:
    reader = InMemoryMetricReader()
    config = NemoLensConfig(
        enabled=True, exporter="file", trace_file=str(tmp_path / "t.jsonl"), span_groups="all"
    )
    handle = setup_telemetry(config, metric_reader=reader, _allow_reinit=True)
    steps(1)
    handle.force_flush()
    names = set(metrics_by_name(reader))
    handle.shutdown()
    assert not any(name.startswith("nemo.goodput.") for name in names)


def test_an_export_threads_poll_drains_a_batch_of_ended_spans(clock: list[int]) -> None:
    from nemo.lens._sdk.goodput import POLL_SPANS

    live = recorder(clock)
    clock[0] = 10 * S
    live.observe(span(SpanGroup.STEP, 0, 1, iteration=0))
    live.poll()  # one span, polled at once: left for later
    assert live.window(60)[0] == 0
    for n in range(1, POLL_SPANS):
        live.observe(span(SpanGroup.FORWARD_BACKWARD, n / 1000, n / 1000 + 0.0005))
    live.poll()
    length, buckets = live.window(60)
    assert length > 0 and buckets["productive"] == 1 * S


def test_only_the_latest_iterations_are_remembered(
    clock: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("nemo.lens._sdk.goodput.ITERATIONS_KEPT", 3)
    live = recorder(clock)
    for iteration in range(5):
        live.observe(span(SpanGroup.STEP, iteration, iteration + 1, iteration=iteration))
    live.observe(span(SpanGroup.STEP, 5, 6, iteration=4))  # remembered: 4 is wasted
    live.observe(span(SpanGroup.STEP, 6, 7, iteration=0))  # forgotten: 0 stays productive
    live.close()
    buckets = live.figures()[1]
    assert buckets["wasted_progress"] == 1 * S
    assert buckets["productive"] == 6 * S
