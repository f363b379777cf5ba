"""``nemo-lens goodput``: figures from real traces at known times, a crash and resume included."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from nemo.lens import semconv
from nemo.lens.cli._engine import connect
from nemo.lens.cli._goodput import BADPUT_BUCKETS, goodput_runs, run_json
from nemo.lens.consumers.megatron import MegatronSpanGroup
from nemo.lens.groups import SpanGroup

from .conftest import Result, line, span_dict, write_lines
from .goodput_traces import (
    DISRUPTED,
    RANK0,
    RANK1,
    RUN,
    Span,
    crash_and_resume,
    disrupted_megatron_run,
    emit_lifetime,
    step,
)
from .test_engine import reference

Run = Callable[..., Result]
KEYS = {"wall_s", "productive_s", "goodput", "badput"}


def figures(entry: dict[str, Any]) -> dict[str, Any]:
    """The figures of a run or rank as the expectations state them (goodput checked apart)."""
    return {key: entry[key] for key in ("wall_s", "productive_s", "badput", "lifetimes", "steps")}


def adds_up(entry: dict[str, Any]) -> None:
    assert set(entry["badput"]) == set(BADPUT_BUCKETS)
    total = entry["productive_s"] + sum(entry["badput"].values())
    assert total == pytest.approx(entry["wall_s"], abs=1e-9)
    assert entry["goodput"] == pytest.approx(entry["productive_s"] / entry["wall_s"])


def test_a_crash_and_resume_over_two_ranks_is_accounted_exactly(run: Run, tmp_path: Path) -> None:
    paths = crash_and_resume(tmp_path)

    result = run("goodput", "--json", *map(str, paths))

    assert result.status == 0, result.err
    assert result.err == ""
    (text,) = result.out_lines  # one run: one JSON object, on one line
    report = json.loads(text)
    assert KEYS <= set(report)
    assert set(report) == KEYS | {"run_id", "bounding_rank", "lifetimes", "steps", "ranks"}
    assert report["run_id"] == "run1"
    assert report["bounding_rank"] == 1
    assert figures(report) == RUN
    assert report["goodput"] == RUN["productive_s"] / RUN["wall_s"]
    ranks = {entry["rank"]: entry for entry in report["ranks"]}
    assert figures(ranks[0]) == RANK0
    assert figures(ranks[1]) == RANK1
    for entry in (report, *report["ranks"]):
        adds_up(entry)


def test_anomalous_steps_data_loading_start_up_and_recovery(run: Run, tmp_path: Path) -> None:
    path = disrupted_megatron_run(tmp_path / "megatron.jsonl")

    result = run("goodput", "--json", str(path))

    assert result.status == 0, result.err
    report = json.loads(result.out)
    assert figures(report) == DISRUPTED
    (rank,) = report["ranks"]
    assert figures(rank) == DISRUPTED
    adds_up(report)
    assert [report] == reference([path])[1]


def _back_to_back_steps(directory: Path, lengths_ms: list[int]) -> Path:
    """A trace of rank 0's steps, one after another, of these lengths; iteration i."""
    lines, at = [], 0
    for i, length in enumerate(lengths_ms):
        record = span_dict(
            "train.step",
            start_ms=at,
            end_ms=at + length,
            group=SpanGroup.STEP,
            rank=0,
            attributes={"iteration": i},
        )
        lines.append(line(record))
        at += length
    return write_lines(directory / "t.jsonl", lines)


def test_step_deviation_over_a_long_run_is_the_references(tmp_path: Path) -> None:
    # 1,250 steps (ms): mostly 10, every seventh 11, every 97th 40; of the last 100, every
    # other one 3 ms slower. Median 10, MAD 0: every step over 10 ms is anomalous.
    lengths = [40 if i % 97 == 96 else 11 if i % 7 == 0 else 10 for i in range(1250)]
    lengths = [t + 3 if i >= 1150 and i % 2 else t for i, t in enumerate(lengths)]
    path = _back_to_back_steps(tmp_path, lengths)

    with connect([str(path)]) as engine:
        (found,) = [run_json(r) for r in goodput_runs(engine)]
        # The optimiser goodput turns off for its query is on again for the next.
        assert engine.rows("SELECT current_setting('disabled_optimizers')") == [("",)]

    assert found == reference([path])[1][0]
    assert found["steps"]["counted"] == 1250
    assert found["steps"]["anomalous"] == sum(1 for t in lengths if t > 10)
    assert found["steps"]["ideal_s"] == 0.01
    excess_ms = sum(t - 10 for t in lengths if t > 10)
    assert found["badput"]["anomalous_steps"] == pytest.approx(excess_ms / 1000)


def test_step_deviation_compares_the_last_100_steps_with_the_1000_before(
    tmp_path: Path,
) -> None:
    # 1,250 steps (ms), oldest first: 150 of 10 (too old to count), 500 of 12, 500 of 10,
    # then 100 of 10 and 13 in turn. Ideal 10; the last 100 deviate by 0 or 3 (p90: 3), the
    # 1,000 before them by 0 or 2, half each (median: 1). A step of the 1,000 left out of
    # the median, or an old one let in, moves it.
    lengths = [10] * 150 + [12] * 500 + [10] * 500 + [10, 13] * 50
    path = _back_to_back_steps(tmp_path, lengths)

    with connect([str(path)]) as engine:
        (found,) = [run_json(r) for r in goodput_runs(engine)]

    assert found == reference([path])[1][0]
    assert found["steps"]["ideal_s"] == 0.01
    assert found["steps"]["deviation_s"] == pytest.approx(0.002)


def test_a_step_run_again_after_a_span_of_another_bucket_is_wasted(tmp_path: Path) -> None:
    # No span overlaps another, so the steps' iterations alone show the rollback; the
    # checkpoint load between iteration 3 and the second run of 2 carries no iteration.
    spans = [
        (SpanGroup.STEP, 0, 10, 1),
        (SpanGroup.STEP, 10, 20, 2),
        (SpanGroup.STEP, 20, 30, 3),
        (SpanGroup.LOAD_CHECKPOINT, 30, 35, None),
        (SpanGroup.STEP, 35, 45, 2),
        (SpanGroup.STEP, 45, 55, 3),
    ]
    lines = [
        line(
            span_dict(
                group,
                start_ms=start,
                end_ms=end,
                group=group,
                attributes={} if iteration is None else {"iteration": iteration},
            )
        )
        for group, start, end, iteration in spans
    ]
    path = write_lines(tmp_path / "t.jsonl", lines)

    with connect([str(path)]) as engine:
        (found,) = [run_json(r) for r in goodput_runs(engine)]

    assert found == reference([path])[1][0]
    assert found["badput"]["wasted_progress"] == pytest.approx(0.02)
    assert found["productive_s"] == pytest.approx(0.03)


def test_the_table_shows_the_run_and_every_rank(run: Run, tmp_path: Path) -> None:
    result = run("goodput", *map(str, crash_and_resume(tmp_path)))

    assert result.status == 0, result.err
    lines = result.out_lines
    assert lines[0] == (
        "run run1: goodput 35.9% (33.000 s productive of 92.000 s wall; "
        "rank 1, the slowest of 2, bounds it; 2 lifetimes)"
    )
    table = {row.split()[0]: row.split()[1:] for row in lines[2:14]}
    assert table["productive"] == ["33.000", "s", "35.9%"]
    assert table["restart"] == ["17.000", "s", "18.5%"]
    assert table["anomalous_steps"] == ["0.000", "s", "0.0%"]
    assert table["wall"] == ["92.000", "s", "100.0%"]
    assert lines[14] == (
        "  steps: 4 counted, 0 anomalous; ideal step time 8.250 s, step deviation 1.750 s"
    )
    assert lines[16].split()[:4] == ["rank", "lifetimes", "wall", "goodput"]
    assert lines[16].split()[-3:] == ["ideal", "step", "deviation"]
    assert lines[17].split()[:7] == ["rank", "0", "2", "92.000", "s", "37.0%", "34.000"]
    assert lines[17].split()[-4:] == ["8.500", "s", "1.500", "s"]
    assert lines[18].split()[:7] == ["rank", "1", "2", "90.000", "s", "36.7%", "33.000"]


def test_iterations_under_another_attribute_name(run: Run, tmp_path: Path) -> None:
    paths = [str(p) for p in crash_and_resume(tmp_path, step_attribute="global_step")]

    default = run("goodput", "--json", *paths)
    named = run("goodput", "--json", "--iteration-attribute", "global_step", *paths)

    # Without the name, a re-executed iteration cannot be told: no wasted progress, and a note.
    assert default.status == 0
    assert json.loads(default.out)["badput"]["wasted_progress"] == 0
    assert json.loads(default.out)["productive_s"] == RUN["productive_s"] + 15
    assert default.err == (
        "nemo-lens: note: 12 of 12 step spans carry no whole-number 'iteration' attribute; "
        "their time counts as productive, since a re-executed iteration cannot be told "
        "(name the attribute with --iteration-attribute)\n"
    )
    assert figures(json.loads(named.out)) == RUN
    assert named.err == ""


def test_a_trace_without_steps_says_how_to_record_them(run: Run, tmp_path: Path) -> None:
    path = emit_lifetime(tmp_path / "t.jsonl", [Span(SpanGroup.JOB, 0, 10)])

    result = run("goodput", "--json", str(path))

    assert result.status == 0
    assert json.loads(result.out)["goodput"] == 0.0
    assert json.loads(result.out)["badput"]["unaccounted"] == 10.0
    assert result.err == (
        "nemo-lens: note: no step span in the trace, so nothing counts as productive; "
        "record the step group (NEMO_LENS_SPAN_GROUPS=per_step)\n"
    )


def test_megatron_evaluation_is_not_a_bucket_of_its_own(run: Run, tmp_path: Path) -> None:
    # Megatron recategorizes evaluate as profiling: its time stays with the enclosing step.
    spans = [step(1, 0, 10), Span(MegatronSpanGroup.EVALUATE, 2, 4)]
    megatron = emit_lifetime(tmp_path / "m.jsonl", spans, span_group_cls=MegatronSpanGroup)
    base = emit_lifetime(tmp_path / "b.jsonl", spans, run_id="run2")

    result = run("goodput", "--json", str(megatron), str(base))

    by_run = {r["run_id"]: r for r in map(json.loads, result.out_lines)}
    assert by_run["run1"]["badput"]["evaluation"] == 0
    assert by_run["run1"]["productive_s"] == 10
    assert by_run["run2"]["badput"]["evaluation"] == 2
    assert by_run["run2"]["productive_s"] == 8


def test_a_span_without_its_category_takes_the_base_classes(tmp_path: Path) -> None:
    old = span_dict("train.evaluate", start_ms=0, end_ms=1, group=SpanGroup.EVALUATE)
    tagged = span_dict(
        "train.evaluate",
        start_ms=0,
        end_ms=1,
        group=SpanGroup.EVALUATE,
        attributes={semconv.SPAN_CATEGORY: "profiling"},
    )
    unknown = span_dict("mine", start_ms=0, end_ms=1, group="test_only_group")
    path = write_lines(tmp_path / "t.jsonl", [line(old), line(tagged), line(unknown)])
    with connect([str(path)]) as engine:
        buckets = engine.rows(
            "SELECT s.span_category, CASE WHEN coalesce(s.span_category, g.category) = "
            "'goodput' THEN coalesce(g.bucket, '') ELSE '' END FROM spans s "
            "LEFT JOIN span_groups g USING (span_group) ORDER BY s.span_category NULLS FIRST, "
            "s.span_group"
        )
    assert [bucket for _, bucket in buckets] == [
        SpanGroup.GROUP_INFO[SpanGroup.EVALUATE].bucket,
        "",
        "",
    ]


@pytest.mark.parametrize(
    ("value", "expected"),
    [(7, 7), ("12", 12), (3.0, 3), (3.5, None), (True, None), ("x", None), (None, None)],
)
def test_iteration_values(tmp_path: Path, value: object, expected: int | None) -> None:
    attributes = {} if value is None else {"iteration": value}
    record = span_dict("s", start_ms=0, end_ms=1, group=SpanGroup.STEP, attributes=attributes)
    with connect([str(write_lines(tmp_path / "t.jsonl", [line(record)]))]) as engine:
        assert engine.rows("SELECT iteration FROM spans") == [(expected,)]


def test_lifetimes_of_traces_written_before_the_lifetime_id(run: Run, tmp_path: Path) -> None:
    # No nemo.lifetime.id: the pid and the file tell lifetimes apart.
    def old(start: float, end: float, pid: int, iteration: int) -> str:
        record = span_dict(
            "train.step",
            start_ms=start * 1000,
            end_ms=end * 1000,
            group=SpanGroup.STEP,
            attributes={"iteration": iteration},
        )
        record["resource"][semconv.PROCESS_PID] = pid
        return line(record)

    same_file = write_lines(tmp_path / "a.jsonl", [old(0, 2, 10, 1), old(5, 7, 11, 1)])
    result = run("goodput", "--json", str(same_file))
    report = json.loads(result.out)
    assert report["lifetimes"] == 2
    assert report["badput"]["restart"] == 3
    assert report["badput"]["wasted_progress"] == 2
    assert report["productive_s"] == 2


@pytest.mark.parametrize(
    ("argv", "status", "message"),
    [
        (["goodput"], 2, "the following arguments are required: TRACE"),
        (["goodput", "--iteration-attribute", " ", "x"], 2, "the attribute name is empty"),
        (["goodput", "missing.jsonl"], 1, "missing.jsonl: no such file"),
    ],
)
def test_bad_usage_and_bad_input(
    run: Run,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    argv: list[str],
    status: int,
    message: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    result = run(*argv)
    assert result.status == status
    assert message in result.err
    assert result.out == ""


def test_a_garbled_line_names_its_place_and_prints_nothing(run: Run, tmp_path: Path) -> None:
    (path, *_) = crash_and_resume(tmp_path)
    with path.open("a", encoding="utf-8") as stream:
        stream.write('{"name": "cut short\n')
    lines = len(path.read_text(encoding="utf-8").splitlines())

    result = run("goodput", str(path))

    assert result.status == 1
    assert result.out == ""
    assert result.err.startswith(f"nemo-lens: error: {path}:{lines}: not a JSON span record")
    skipped = run("goodput", "--skip-invalid", "--json", str(path))
    assert skipped.status == 0
    assert figures(json.loads(skipped.out)) == {**RANK0}
