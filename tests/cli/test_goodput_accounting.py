"""The goodput accounting: every second of a run goes to exactly one bucket, by its rules."""

from __future__ import annotations

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
    }


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
        st.sampled_from(["", "productive", "initialization", "checkpoint_save", "evaluation"]),
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
