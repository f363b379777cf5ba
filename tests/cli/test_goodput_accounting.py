"""The goodput accounting: every second of a run goes to exactly one bucket, by its rules."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.cli.reference.goodput import BUCKETS, Accountant, GoodputSpan

S = 1_000_000_000
"""Nanoseconds per second."""


def span(
    bucket: str,
    start: float,
    end: float,
    *,
    iteration: int | None = None,
    lifetime: str = "a",
    rank: int | None = 0,
    run: str = "run",
) -> GoodputSpan:
    return GoodputSpan(run, rank, lifetime, bucket, iteration, round(start * S), round(end * S))


def figures(*spans: GoodputSpan) -> dict[str, float]:
    (run,) = Accountant().add_all(spans).runs()
    return {name: value / S for name, value in run.run.buckets.items()} | {
        "wall": run.run.wall_ns / S
    }


def test_a_crash_and_resume_is_restart_and_wasted_progress() -> None:
    # Lifetime a: initialization 0-10, steps 1 to 3, a checkpoint between steps 2 and 3,
    # and a crash during step 4 at 45. Lifetime b starts at 60: loads its checkpoint,
    # runs steps 3 and 4 again, and its job ends at 90.
    result = figures(
        span("", 0, 45),  # lifetime a's job span: transparent
        span("initialization", 0, 10),
        span("productive", 10, 20, iteration=1),
        span("productive", 20, 28, iteration=2),
        span("checkpoint_save", 28, 30),
        span("productive", 30, 40, iteration=3),
        span("productive", 40, 45, iteration=4),
        span("", 60, 90, lifetime="b"),
        span("initialization", 60, 65, lifetime="b"),
        span("productive", 65, 75, iteration=3, lifetime="b"),
        span("productive", 75, 85, iteration=4, lifetime="b"),
    )
    assert result == {
        "wall": 90,
        "productive": 10 + 8 + 10 + 10,  # iterations 1, 2 in a; 3, 4 in b
        "initialization": 10 + 5,
        "checkpoint_save": 2,
        "evaluation": 0,
        "wasted_progress": 10 + 5,  # iterations 3 and 4 of lifetime a
        "restart": 15,  # 45 -> 60
        "unaccounted": 5,  # 85 -> 90
        # Each lifetime's set-up reaches its first step; the steps take 10, 8, 10, 10 s
        # (median 10, MAD 0): none is slower than 10, none anomalous.
        "data_loading": 0,
        "startup": 0,
        "recovery": 0,
        "anomalous_steps": 0,
    }


def test_an_anomalous_steps_excess_over_the_ideal_is_its_own_bucket() -> None:
    # Steps of 9, 10, 11, 10, 12 and 40 s: median 10.5, MAD 1 (deviations .5 .5 .5 1.5 1.5
    # 29.5), so over 13.5 is anomalous: the 40 s step. Ideal: (9+10+11+10+12) / 5 = 10.4.
    lengths = [9, 10, 11, 10, 12, 40]
    starts = [sum(lengths[:i]) for i in range(len(lengths))]
    spans = [
        span("productive", start, start + length, iteration=i)
        for i, (start, length) in enumerate(zip(starts, lengths, strict=True))
    ]
    (run,) = Accountant().add_all(spans).runs()

    assert run.run.buckets["anomalous_steps"] == round(29.6 * S)
    assert run.run.buckets["productive"] == 92 * S - round(29.6 * S)
    assert run.run.steps.counted == 6
    assert run.run.steps.anomalous == 1
    assert run.run.steps.ideal_ns == 10.4 * S
    # Fewer than 100 steps: the mean of |step - ideal|: (1.4+.4+.6+.4+1.6+29.6) / 6.
    assert run.run.steps.deviation_ns == pytest.approx(34 / 6 * S)


def test_the_excess_is_rounded_up_to_whole_nanoseconds() -> None:
    # 3, 3, 4 and 100 ns: median 3.5, MAD .5, ideal 10/3 ns; excess 100 - 3 (not 96.67).
    spans = [
        GoodputSpan("run", 0, "a", "productive", i, a, b)
        for i, (a, b) in enumerate([(0, 3), (3, 6), (6, 10), (10, 110)])
    ]
    (run,) = Accountant().add_all(spans).runs()
    assert run.run.buckets["anomalous_steps"] == 97
    assert run.run.buckets["productive"] == 110 - 97


def test_steps_of_one_length_are_none_anomalous() -> None:
    (run,) = (
        Accountant().add_all(span("productive", i, i + 1, iteration=i) for i in range(5)).runs()
    )
    assert run.run.buckets["anomalous_steps"] == 0
    assert run.run.steps.deviation_ns == 0


def test_step_deviation_after_100_and_after_1100_steps() -> None:
    # 1,150 steps: 1,050 alternating 12 and 10 ns, then 100 alternating 20 and 10 ns.
    # 575 tens, 525 twelves, 50 twenties: median 11, MAD 1, so the twenties (over 14) are
    # anomalous and the ideal is the mean of the rest.
    lengths = [12, 10] * 525 + [20, 10] * 50
    spans, at = [], 0
    for i, length in enumerate(lengths):
        spans.append(GoodputSpan("run", 0, "a", "productive", i, at, at + length))
        at += length
    figures = Accountant().add_all(spans).runs()[0].run.steps
    normal = [t for t in lengths if t <= 14]
    ideal = sum(normal) / len(normal)
    recent = sorted(abs(t - ideal) for t in lengths[-100:])
    baseline = sorted(abs(t - ideal) for t in lengths[-1100:-100])
    p90 = recent[89] + (recent[90] - recent[89]) * 0.1
    median = (baseline[499] + baseline[500]) / 2
    assert figures.ideal_ns == ideal
    assert figures.anomalous == 50
    assert figures.deviation_ns == pytest.approx(p90 - median)
    shorter = Accountant().add_all(spans[:150]).runs()[0].run.steps
    # 150 steps of 12 and 10 ns: ideal 11, every deviation 1; the p90 of the last 100.
    assert (shorter.counted, shorter.ideal_ns, shorter.deviation_ns) == (150, 11, 1)


def test_start_up_is_a_lifetimes_uncovered_time_before_its_first_step() -> None:
    # The job 0-40; initialization 5-10; the first step at 20: start-up 0-5 and 10-20.
    result = figures(
        span("", 0, 40),
        span("initialization", 5, 10),
        span("productive", 20, 30, iteration=1),
        span("productive", 30, 40, iteration=2),
    )
    assert result["startup"] == 15
    assert result["initialization"] == 5
    assert result["unaccounted"] == 0
    assert result["recovery"] == 0


def test_recovery_runs_from_a_crashed_lifetime_to_the_next_ones_first_step() -> None:
    # Lifetime a: step 1 0-10, crash in step 2 at 15. Lifetime b: 25-50, loads its
    # checkpoint 27-29, runs step 2 from 35: restart 15-25, recovery 25-27 and 29-35.
    result = figures(
        span("productive", 0, 10, iteration=1),
        span("productive", 10, 15, iteration=2),
        span("", 25, 50, lifetime="b"),
        span("initialization", 27, 29, lifetime="b"),
        span("productive", 35, 45, iteration=2, lifetime="b"),
    )
    assert result["restart"] == 10
    assert result["recovery"] == 2 + 6
    assert result["startup"] == 0
    assert result["wasted_progress"] == 5
    assert result["unaccounted"] == 5  # 45-50
    assert result["wall"] == 50


def test_data_loading_inside_a_step_is_data_loading_and_not_the_steps_time() -> None:
    # Steps of 10 s, each waiting 1 s for its batch, but the third, which waits 11 s:
    # its data loading is badput once, not also an anomalous step (its own time is 9 s).
    result = figures(
        span("productive", 0, 10, iteration=1),
        span("data_loading", 0, 1),
        span("productive", 10, 20, iteration=2),
        span("data_loading", 10, 11),
        span("productive", 20, 40, iteration=3),
        span("data_loading", 20, 31),
    )
    assert result["data_loading"] == 1 + 1 + 11
    assert result["productive"] == 9 + 9 + 9
    assert result["anomalous_steps"] == 0


def test_the_most_specific_span_wins() -> None:
    result = figures(
        span("productive", 0, 10, iteration=1),
        span("checkpoint_save", 4, 6),  # a checkpoint inside a step is checkpoint time
        span("evaluation", 5, 5.5),  # and an evaluation inside that, evaluation time
    )
    assert result["productive"] == 8
    assert result["checkpoint_save"] == 1.5
    assert result["evaluation"] == 0.5
    assert result["unaccounted"] == 0


def test_a_step_without_an_iteration_counts_as_productive() -> None:
    assert figures(span("productive", 0, 3), span("productive", 3, 5))["productive"] == 5


def test_the_slowest_rank_bounds_the_run() -> None:
    (run,) = (
        Accountant()
        .add_all(
            [
                span("productive", 0, 10, iteration=1, rank=0),
                span("productive", 0, 6, iteration=1, rank=1),
                span("", 0, 12, rank=1),
            ]
        )
        .runs()
    )
    assert run.bounding_rank == 1
    assert run.run.buckets["productive"] == 6 * S
    assert run.run.wall_ns == 12 * S
    assert run.ranks[0].wall_ns == 10 * S
    assert sum(run.run.buckets.values()) == run.run.wall_ns


def test_a_process_that_runs_no_step_does_not_bound_the_run() -> None:
    # A launcher's spans (unknown rank) widen the run's wall time, nothing more.
    (run,) = (
        Accountant()
        .add_all(
            [
                span("", -2, 11, rank=None),
                span("productive", 0, 4, iteration=1, rank=0),
                span("productive", 4, 10, iteration=2, rank=0),
                span("productive", 0, 3, iteration=1, rank=1),
                span("productive", 3, 6, iteration=2, rank=1),
            ]
        )
        .runs()
    )
    assert run.bounding_rank == 1
    assert run.run.wall_ns == 13 * S
    assert run.run.buckets["productive"] == 6 * S
    assert run.run.buckets["unaccounted"] == 7 * S
    assert run.ranks[None].buckets["productive"] == 0


def test_runs_are_reported_apart() -> None:
    runs = Accountant().add_all([span("", 0, 1, run="b"), span("", 0, 2, run="a")]).runs()
    assert [r.run_id for r in runs] == ["a", "b"]


_SPANS = st.lists(
    st.builds(
        lambda bucket, start, length, iteration, lifetime, rank: span(
            bucket, start, start + length, iteration=iteration, lifetime=lifetime, rank=rank
        ),
        st.sampled_from(
            ["", "productive", "initialization", "checkpoint_save", "evaluation", "data_loading"]
        ),
        st.integers(0, 1000),
        st.integers(0, 200),
        st.one_of(st.none(), st.integers(0, 5)),
        st.sampled_from(["a", "b", "c"]),
        st.sampled_from([0, 1, None]),
    ),
    min_size=1,
    max_size=40,
)


@settings(max_examples=300, deadline=None)
@given(spans=_SPANS)
def test_the_buckets_always_add_up_to_the_wall_time(spans: list[GoodputSpan]) -> None:
    (run,) = Accountant().add_all(spans).runs()
    for breakdown in (run.run, *run.ranks.values()):
        assert set(breakdown.buckets) == set(BUCKETS)
        assert all(value >= 0 for value in breakdown.buckets.values())
        assert sum(breakdown.buckets.values()) == breakdown.wall_ns
        assert 0.0 <= breakdown.goodput <= 1.0
