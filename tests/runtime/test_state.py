"""The enabled span-group set: what is on, what replaces it, what is rejected."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from nemo.lens import testing
from nemo.lens._core import state as core_state
from nemo.lens.consumers.megatron import MegatronSpanGroup
from nemo.lens.groups import DynamicSpanGroup, SpanGroup
from nemo.lens.state import (
    enabled_span_groups,
    is_span_group_enabled,
    set_enabled_span_groups,
)


def test_every_group_is_disabled_before_set_up() -> None:
    assert enabled_span_groups() == frozenset()
    for group in SpanGroup.ALL_GROUPS:
        assert not is_span_group_enabled(DynamicSpanGroup(group))


def test_enabled_groups_are_on_and_the_rest_off() -> None:
    set_enabled_span_groups(SpanGroup.resolve("default"))

    assert is_span_group_enabled(SpanGroup.JOB)
    assert is_span_group_enabled(SpanGroup.CHECKPOINT)
    assert not is_span_group_enabled(SpanGroup.STEP)
    assert not is_span_group_enabled(DynamicSpanGroup("no_such_group"))
    assert enabled_span_groups() == frozenset({"job", "checkpoint", "evaluate"})


def test_consumer_groups_need_no_registration() -> None:
    set_enabled_span_groups(MegatronSpanGroup.resolve("all,-layer"))

    assert is_span_group_enabled(MegatronSpanGroup.MICROBATCH)
    assert not is_span_group_enabled(MegatronSpanGroup.LAYER)


def _names() -> Iterator[str]:
    yield "step"
    yield "optimizer"


@pytest.mark.parametrize(
    "groups",
    [["step", "optimizer"], ("step", "optimizer"), {"step", "optimizer"}, _names()],
    ids=["list", "tuple", "set", "generator"],
)
def test_any_iterable_of_names_is_stored_as_a_frozenset(groups: object) -> None:
    set_enabled_span_groups(groups)  # type: ignore[arg-type]

    stored = enabled_span_groups()
    assert type(stored) is frozenset
    assert stored == frozenset({"step", "optimizer"})


def test_later_changes_to_the_passed_set_do_not_leak_in() -> None:
    groups = {"step"}
    set_enabled_span_groups(groups)
    groups.add("optimizer")

    assert not is_span_group_enabled("optimizer")


def test_a_new_set_replaces_the_old_one_entirely() -> None:
    set_enabled_span_groups(["step"])
    set_enabled_span_groups(["optimizer"])

    assert not is_span_group_enabled("step")
    assert is_span_group_enabled("optimizer")


def test_an_empty_iterable_disables_everything() -> None:
    set_enabled_span_groups(["step"])
    set_enabled_span_groups([])

    assert enabled_span_groups() == frozenset()


def test_a_bare_string_is_rejected_and_the_set_is_unchanged() -> None:
    set_enabled_span_groups(["job"])

    with pytest.raises(TypeError, match=r"not a str; use \['step'\]"):
        set_enabled_span_groups("step")

    assert enabled_span_groups() == frozenset({"job"})
    # Iterating the string would have enabled "s", "t", "e", "p".
    assert not is_span_group_enabled(DynamicSpanGroup("s"))


def test_a_non_string_name_is_rejected_and_the_set_is_unchanged() -> None:
    set_enabled_span_groups(["job"])

    with pytest.raises(TypeError, match=r"must be str, got int \(3\)"):
        set_enabled_span_groups(["step", 3])  # type: ignore[list-item]

    assert enabled_span_groups() == frozenset({"job"})


def test_reset_disables_every_group() -> None:
    set_enabled_span_groups(SpanGroup.ALL_GROUPS)

    testing.reset()

    assert enabled_span_groups() == frozenset()


def test_readers_see_one_whole_set_or_the_other_while_it_is_replaced() -> None:
    first = frozenset({"job", "step"})
    second = frozenset({"checkpoint", "optimizer", "evaluate"})
    set_enabled_span_groups(first)
    stop = threading.Event()
    seen: set[frozenset[str]] = set()

    def read() -> None:
        while not stop.is_set():
            # An in-place update (clear, then add) would show an empty or mixed set.
            seen.add(enabled_span_groups())

    reader = threading.Thread(target=read)
    reader.start()
    try:
        for _ in range(2000):
            set_enabled_span_groups(second)
            set_enabled_span_groups(first)
    finally:
        stop.set()
        reader.join()

    assert seen <= {first, second}
    assert core_state.enabled in (first, second)
