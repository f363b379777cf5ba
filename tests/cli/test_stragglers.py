"""``nemo-lens stragglers``: arrival at the sync points on synchronous traces.

Every rank's steps last as long as the others' (tests.cli.arrival_traces), so the
duration-based table sees nothing; the late rank is found by its start, and told apart
from a trace where the last rank rotates. Figures against a hand-worked reference.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from nemo.lens.cli._engine import connect, query
from nemo.lens.consumers.megatron import MegatronSpanGroup
from nemo.lens.groups import SpanGroup

from . import arrival_traces
from .arrival_traces import ITERATIONS, late_rank, rotating
from .conftest import MS, Result, line, span_dict, write_lines
from .reference.arrivals import Span, arrivals

Run = Callable[..., Result]


def rows(run: Run, trace: Path) -> list[dict[str, object]]:
    result = run("stragglers", str(trace), "--json")
    assert result.status == 0, result.err
    return [json.loads(text) for text in result.out.splitlines()]


def test_the_sync_groups_come_from_the_schema() -> None:
    assert {SpanGroup.STEP, SpanGroup.OPTIMIZER} <= SpanGroup.SYNC_GROUPS
    assert SpanGroup.FORWARD_BACKWARD not in SpanGroup.SYNC_GROUPS
    assert MegatronSpanGroup.SYNC_GROUPS == SpanGroup.SYNC_GROUPS | {
        MegatronSpanGroup.COMMUNICATION
    }
    assert all(
        info.sync == (name in SpanGroup.SYNC_GROUPS) for name, info in SpanGroup.GROUP_INFO.items()
    )


def test_a_rank_late_at_every_iteration_is_found_by_its_start(run: Run, tmp_path: Path) -> None:
    trace = arrival_traces.write(tmp_path / "late.jsonl", late_rank)
    found = rows(run, trace)

    # By hand: offsets 0, 1, 7, 2 ms; the median rank's 1.5 ms; rank 2 is 5.5 ms late, last
    # every time. Score: the group's time per iteration over itself plus that (80 ms steps,
    # 15 ms optimizer spans).
    def row(
        group: str, rank: int, last: int, lateness_ms: float, score: float
    ) -> dict[str, object]:
        node = arrival_traces.NODES[rank]
        share = last / ITERATIONS
        pattern = "persistent" if last == ITERATIONS else ""
        lateness = round(lateness_ms * MS)
        return dict(
            run_id="sync",
            span_group=group,
            rank=rank,
            node=node,
            iterations=ITERATIONS,
            times_last=last,
            last_share=share,
            median_lateness_ns=lateness,
            max_lateness_ns=lateness,
            score=score,
            pattern=pattern,
        )

    assert found == [
        row("optimizer", 2, 10, 5.5, round(15 / 20.5, 4)),
        row("step", 2, 10, 5.5, round(80 / 85.5, 4)),
        row("optimizer", 3, 0, 0.5, round(15 / 15.5, 4)),
        row("step", 3, 0, 0.5, round(80 / 80.5, 4)),
        row("optimizer", 0, 0, -1.5, 1.0),
        row("optimizer", 1, 0, -0.5, 1.0),
        row("step", 0, 0, -1.5, 1.0),
        row("step", 1, 0, -0.5, 1.0),
    ]

    # The duration table alone does not find it: every step lasts as long as the others'.
    with connect([str(trace)]) as engine:
        lags = {lag for *_, lag, _ in engine.rows(query("stragglers"))}
    assert lags == {0}


def test_a_rotating_late_comer_is_told_apart(run: Run, tmp_path: Path) -> None:
    found = rows(run, arrival_traces.write(tmp_path / "rotating.jsonl", rotating))

    # Iterations 1-10, rank i % 4 late: ranks 1 and 2 last three times, 0 and 3 twice.
    last = {(r["span_group"], r["rank"]): r["times_last"] for r in found}
    assert last == {
        (g, rank): n for g in ("optimizer", "step") for rank, n in ((0, 2), (1, 3), (2, 3), (3, 2))
    }
    assert {r["pattern"] for r in found} == {"rotating"}
    assert {(r["median_lateness_ns"], r["max_lateness_ns"], r["score"]) for r in found} == {
        (0, 5 * MS, 1.0)
    }


def test_the_table(run: Run, tmp_path: Path) -> None:
    result = run("stragglers", str(arrival_traces.write(tmp_path / "late.jsonl", late_rank)))

    assert result.status == 0, result.err
    assert result.err == ""
    lines = result.out.splitlines()
    assert lines[0] == "optimizer: arrival over 10 iterations"
    assert lines[1].split() == [
        "rank",
        "node",
        "times",
        "last",
        "median",
        "lateness",
        "score",
        "pattern",
    ]
    assert lines[2].split() == ["2", "node-b", "10/10", "5.50", "ms", "0.732", "persistent"]
    assert lines[4].split() == ["0", "node-a", "0/10", "-1.50", "ms", "1.000", "-"]
    assert "step: arrival over 10 iterations" in lines


def test_a_re_executed_iteration_counts_its_last_execution(run: Run, tmp_path: Path) -> None:
    # Rank 1 starts iteration 1 first, dies, and runs it again in a new lifetime, last.
    spans = []
    for n, (rank, start, lifetime) in enumerate(((0, 5.0, "a"), (1, 0.0, "b"), (1, 100.0, "c"))):
        span = span_dict(
            "train.step",
            start_ms=start,
            end_ms=start + 50,
            group=SpanGroup.STEP,
            rank=rank,
            span_id=f"{n + 1:016x}",
            attributes={"iteration": 1},
        )
        span["lifetime"] = lifetime
        spans.append(line(span))
    found = rows(run, write_lines(tmp_path / "t.jsonl", spans))
    # Iteration 1: rank 0 at 5 ms, rank 1 (its execution that counts) at 100 ms.
    assert [(r["rank"], r["times_last"], r["median_lateness_ns"]) for r in found] == [
        (1, 1, round(47.5 * MS)),
        (0, 0, round(-47.5 * MS)),
    ]


def test_a_span_in_a_step_that_crosses_a_chunk_takes_the_step_s_iteration(
    run: Run, tmp_path: Path
) -> None:
    # The query finds a span's step per chunk of 2^40 ns (about 18 minutes) from the run's
    # first span: a 20-minute step encloses an optimizer span (no iteration of its own)
    # that starts in the next chunk.
    chunk_ms = 2**40 / MS
    spans = []
    for rank, offset in ((0, 0.0), (1, 5.0)):
        step = span_dict(
            "train.step",
            start_ms=offset,
            end_ms=offset + 1.1 * chunk_ms,
            group=SpanGroup.STEP,
            rank=rank,
            span_id=f"{2 * rank + 1:016x}",
            attributes={"iteration": 3},
        )
        optimizer = span_dict(
            "train.optimizer",
            start_ms=offset + 1.05 * chunk_ms,
            end_ms=offset + 1.06 * chunk_ms,
            group=SpanGroup.OPTIMIZER,
            rank=rank,
            span_id=f"{2 * rank + 2:016x}",
        )
        spans += [line(step), line(optimizer)]
    found = rows(run, write_lines(tmp_path / "t.jsonl", spans))
    late = {(r["span_group"], r["rank"]): r["median_lateness_ns"] for r in found}
    assert late == {
        (SpanGroup.OPTIMIZER, 0): round(-2.5 * MS),
        (SpanGroup.OPTIMIZER, 1): round(2.5 * MS),
        (SpanGroup.STEP, 0): round(-2.5 * MS),
        (SpanGroup.STEP, 1): round(2.5 * MS),
    }


@pytest.mark.bad_input("stragglers-no-sync-spans")
def test_no_sync_spans_is_a_note(run: Run, tmp_path: Path) -> None:
    trace = write_lines(
        tmp_path / "t.jsonl",
        [
            line(span_dict("train.job", start_ms=0, end_ms=10, group=SpanGroup.JOB, rank=r))
            for r in (0, 1)
        ],
    )
    result = run("stragglers", str(trace))
    assert (result.status, result.out) == (0, "")
    assert result.err == (
        "nemo-lens: note: no span of a sync group (communication, optimizer, step), so no "
        "arrival to compare; record them (NEMO_LENS_SPAN_GROUPS=per_step)\n"
    )


@pytest.mark.bad_input("stragglers-without-rank")
def test_sync_spans_without_a_rank_are_left_out_and_said(run: Run, tmp_path: Path) -> None:
    spans = [
        span_dict(
            "train.step",
            start_ms=s,
            end_ms=s + 5,
            group=SpanGroup.STEP,
            rank=rank,
            span_id=f"{n:016x}",
            attributes={"iteration": 1},
        )
        for n, (rank, s) in enumerate(((0, 0.0), (1, 2.0), (None, 9.0)))
    ]
    result = run("stragglers", str(write_lines(tmp_path / "t.jsonl", [line(s) for s in spans])))
    assert result.status == 0
    assert result.err == (
        "nemo-lens: note: 1 of 3 spans of sync groups carry no rank and are left out; set "
        "dl.rank (or nemo.rank) on each process's resource\n"
    )
    assert [r.split()[:3] for r in result.out.splitlines()[2:]] == [
        ["1", "-", "1/1"],
        ["0", "-", "0/1"],
    ]


def test_the_docs_arrival_query_gives_the_command_s_rows(run: Run, tmp_path: Path) -> None:
    text = (Path(__file__).resolve().parents[2] / "docs" / "sql.md").read_text(encoding="utf-8")
    documented = re.search(r"```sql\n(.*?)```", text.split("## The arrival query", 1)[1], re.S)
    assert documented is not None, "docs/sql.md: the arrival query's sql block"
    trace = str(arrival_traces.write(tmp_path / "late.jsonl", late_rank))
    ours = run("sql", documented.group(1), trace, "--format", "json")
    packaged = run("sql", query("arrivals"), trace, "--format", "json")
    assert ours.status == packaged.status == 0, ours.err + packaged.err
    assert ours.out == packaged.out
    assert '"persistent"' in ours.out


def test_the_report_shows_the_late_rank(run: Run, tmp_path: Path) -> None:
    trace = arrival_traces.write(tmp_path / "late.jsonl", late_rank)
    page = tmp_path / "late.html"
    assert run("report", str(trace), "-o", str(page)).status == 0
    (section,) = re.findall(
        r'<section id="arrivals">.*?</section>', page.read_text(encoding="utf-8")
    )
    assert re.findall(
        r'data-group="(\w+)" data-process="([^"]*)" data-times-last="(\d+)"', section
    ) == [
        ("optimizer", "rank 2", "10"),
        ("step", "rank 2", "10"),
    ]
    assert "<td>node-b</td><td>10 of 10</td><td>5.50 ms</td><td>0.936</td><td>persistent" in section
    # The duration table of the same page: no iteration with a slower rank.
    (durations,) = re.findall(
        r'<section id="stragglers">.*?</section>', page.read_text(encoding="utf-8")
    )
    assert "At none of the 10 iterations" in durations


def test_groups_marks_the_sync_points(run: Run) -> None:
    result = run("groups", "--class", "megatron")
    assert result.status == 0, result.err
    marked = {row.split()[0] for row in result.out.splitlines() if row.endswith("(sync point)")}
    assert marked == set(MegatronSpanGroup.SYNC_GROUPS)


def _random_spans(rng: random.Random) -> list[Span]:
    """Ranks with one to three lifetimes (a re-executed iteration now and then), steps of
    any length (some across a 2^40 ns chunk edge), optimizer spans with and without an
    iteration of their own, some outside every step, some starting with their step."""
    spans = []
    for run in ("a", "b")[: rng.randint(1, 2)]:
        for rank in range(rng.randint(2, 4)):
            at, iteration = rng.randrange(10**6), 0
            for life in range(rng.randint(1, 3)):
                iteration = max(0, iteration - rng.randint(0, 2))
                for _ in range(rng.randint(1, 6)):
                    if rng.random() < 0.2:
                        at += 2**40 - rng.randrange(10**6)  # near a chunk edge
                    length = rng.choice([10**6, rng.randrange(1, 10**7), 2**39, 5])
                    host = f"node-{rank % 2}" if rng.random() < 0.8 else ""
                    lifetime = f"{run}{rank}-{life}"
                    spans.append(
                        Span(run, rank, lifetime, SpanGroup.STEP, at, at + length, iteration, host)
                    )
                    for _ in range(rng.randint(0, 3)):
                        # A step and a span may start together: the step comes first.
                        start = at + rng.choice([0, rng.randrange(-100, length + 100)])
                        own = iteration if rng.random() < 0.3 else None
                        end = start + rng.randrange(1000)
                        spans.append(
                            Span(run, rank, lifetime, SpanGroup.OPTIMIZER, start, end, own, host)
                        )
                    at += length + rng.randrange(1000)
                    iteration += 1
    return spans


@pytest.mark.parametrize("seed", range(12))
def test_the_figures_are_the_reference_s_on_random_traces(
    run: Run, tmp_path: Path, seed: int
) -> None:
    spans = _random_spans(random.Random(seed))
    lines = []
    for n, s in enumerate(spans):
        record = span_dict(
            "x", start_ms=0, end_ms=0, group=s.group, rank=s.rank, run=s.run_id,
            span_id=f"{n + 1:016x}",
            attributes={} if s.iteration is None else {"iteration": s.iteration},
        )  # fmt: skip
        record["start_time_unix_nano"], record["end_time_unix_nano"] = s.start_ns, s.end_ns
        record["lifetime"] = s.lifetime
        if s.host:
            record["resource"]["host.name"] = s.host
        lines.append(line(record))
    found = rows(run, write_lines(tmp_path / "t.jsonl", lines))
    expected = arrivals(spans, set(SpanGroup.SYNC_GROUPS), SpanGroup.STEP)
    assert [tuple(r.values()) for r in found] == [
        (*row[:6], pytest.approx(row[6], abs=1e-4), *row[7:9], pytest.approx(row[9], abs=1e-4),
         row[10])
        for row in expected
    ]  # fmt: skip
    assert found, "a random trace with no straggler figures tests nothing"
