"""Hand-written span-group subclasses (COMPAT.md §2) resolve, configure and gate end to end.

The classes here are written the way the original "Add a New Span Group" page
and Megatron-LM's own file write them: class constants, ``ALL_GROUPS =
SpanGroup.ALL_GROUPS | frozenset([...])`` and a ``_PRESETS`` dict. Their group
names are their own; base groups are taken from the generated class, never
spelled out.
"""

from __future__ import annotations

from typing import ClassVar

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from nemo.lens import NemoLensConfig, managed_span, semconv, setup_telemetry, trace_fn
from nemo.lens.groups import DynamicSpanGroup, SpanGroup
from nemo.lens.spec import GOODPUT, PROFILING

# Two base groups, one of each category when the base vocabulary has both.
_BASE_GOODPUT = sorted(SpanGroup.GOODPUT_GROUPS)[0]
_BASE_OTHER = sorted(SpanGroup.ALL_GROUPS - {_BASE_GOODPUT})[0]


class TrainerSpanGroup(SpanGroup):
    """Written as 0.1.0 consumers wrote theirs."""

    SHARD_MERGE = "compat_shard_merge"
    DATA_WAIT = "compat_data_wait"

    ALL_GROUPS = SpanGroup.ALL_GROUPS | frozenset([SHARD_MERGE, DATA_WAIT])

    _PRESETS: ClassVar[dict[str, frozenset[str]]] = {
        "default": frozenset([_BASE_GOODPUT, SHARD_MERGE]),
        "per_step": frozenset([_BASE_GOODPUT, _BASE_OTHER, SHARD_MERGE, DATA_WAIT]),
        "merges": frozenset([SHARD_MERGE]),
        "all": ALL_GROUPS,
    }


class GoodputTrainerSpanGroup(TrainerSpanGroup):
    """A hand-written class that also says which of its groups are goodput (upstream's form)."""

    GOODPUT_GROUPS: ClassVar[frozenset[str]] = SpanGroup.GOODPUT_GROUPS | frozenset(
        [TrainerSpanGroup.SHARD_MERGE]
    )


def test_it_resolves_against_its_own_presets_not_the_bases() -> None:
    assert TrainerSpanGroup.resolve("default") == frozenset([_BASE_GOODPUT, "compat_shard_merge"])
    assert TrainerSpanGroup.resolve("default") != SpanGroup.resolve("default")
    assert TrainerSpanGroup.resolve("merges") == {"compat_shard_merge"}
    assert TrainerSpanGroup.resolve("all") == TrainerSpanGroup.ALL_GROUPS
    assert TrainerSpanGroup.resolve("per_step,-compat_data_wait") == frozenset(
        [_BASE_GOODPUT, _BASE_OTHER, "compat_shard_merge"]
    )
    # The implicit presets come with it, as with a generated class.
    assert TrainerSpanGroup.resolve("profiling") == TrainerSpanGroup.ALL_GROUPS
    assert TrainerSpanGroup.resolve("goodput") == SpanGroup.GOODPUT_GROUPS


def test_an_unknown_name_names_its_own_vocabulary() -> None:
    with pytest.raises(ValueError) as info:
        TrainerSpanGroup.resolve("merge")
    message = str(info.value)
    assert "Unknown span group or preset: 'merge'" in message
    assert "did you mean 'merges'?" in message
    assert "compat_shard_merge" in message and "TrainerSpanGroup" in message


def test_categories_come_from_its_goodput_groups() -> None:
    assert TrainerSpanGroup.categories()["compat_shard_merge"] == PROFILING
    assert GoodputTrainerSpanGroup.categories()["compat_shard_merge"] == GOODPUT
    for group in SpanGroup.ALL_GROUPS:
        assert TrainerSpanGroup.categories()[group] == SpanGroup.categories()[group]


def test_it_configures_in_code_and_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    config = NemoLensConfig(span_group_cls=TrainerSpanGroup, span_groups="merges")
    assert config.resolved_span_groups == {"compat_shard_merge"}

    monkeypatch.setenv("NEMO_LENS_SPAN_GROUPS", "default,compat_data_wait")
    from_env = NemoLensConfig.from_env(span_group_cls=TrainerSpanGroup)
    assert from_env.span_group_cls is TrainerSpanGroup
    assert from_env.resolved_span_groups == TrainerSpanGroup.resolve("default") | {
        "compat_data_wait"
    }

    monkeypatch.setenv("NEMO_LENS_SPAN_GROUPS", "merge")
    with pytest.raises(ValueError) as info:
        NemoLensConfig.from_env(span_group_cls=TrainerSpanGroup)
    assert "NEMO_LENS_SPAN_GROUPS='merge'" in str(info.value)
    assert "did you mean 'merges'?" in str(info.value)


@pytest.mark.parametrize("cls", [TrainerSpanGroup, GoodputTrainerSpanGroup])
def test_it_gates_and_tags_spans_end_to_end(cls: type[TrainerSpanGroup]) -> None:
    exporter = InMemorySpanExporter()
    handle = setup_telemetry(
        NemoLensConfig(
            enabled=True,
            exporter="none",
            metrics_enabled=False,
            span_group_cls=cls,
            span_groups="default",
        ),
        span_exporter=exporter,
    )
    assert handle.enabled_groups == cls.resolve("default")

    @trace_fn(DynamicSpanGroup(cls.SHARD_MERGE), "merge.shards")
    def merge() -> None:
        with managed_span(DynamicSpanGroup(cls.DATA_WAIT), "wait.for.data"):  # not in default
            pass

    with managed_span(DynamicSpanGroup(_BASE_GOODPUT), "base.group"):
        merge()
    handle.shutdown()

    spans = {span.name: dict(span.attributes or {}) for span in exporter.get_finished_spans()}
    assert sorted(spans) == ["base.group", "merge.shards"]
    categories = cls.categories()
    assert spans["merge.shards"] == {
        semconv.SPAN_GROUP: cls.SHARD_MERGE,
        semconv.SPAN_CATEGORY: categories[cls.SHARD_MERGE],
    }
    assert spans["base.group"] == {
        semconv.SPAN_GROUP: _BASE_GOODPUT,
        semconv.SPAN_CATEGORY: categories[_BASE_GOODPUT],
    }
