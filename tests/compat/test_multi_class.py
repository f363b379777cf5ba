"""Several consumers in one process: one spec against the union of their classes (item 8).

Group and preset names are derived from the generated classes, so these tests
hold whatever the schema says.
"""

from __future__ import annotations

import difflib

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from nemo.lens import NemoLensConfig, managed_span, semconv, setup_telemetry
from nemo.lens.consumers.megatron import MegatronSpanGroup
from nemo.lens.consumers.rl import RLSpanGroup
from nemo.lens.groups import DynamicSpanGroup
from nemo.lens.spec import IMPLICIT_PRESETS, categories_for, presets_of

BOTH = (RLSpanGroup, MegatronSpanGroup)
ONLY_MEGATRON = sorted(MegatronSpanGroup.ALL_GROUPS - RLSpanGroup.ALL_GROUPS)
ONLY_RL = sorted(RLSpanGroup.ALL_GROUPS - MegatronSpanGroup.ALL_GROUPS)
SHARED_PRESETS = sorted(
    (set(presets_of(RLSpanGroup)) & set(presets_of(MegatronSpanGroup))) - set(IMPLICIT_PRESETS)
)


@pytest.fixture(autouse=True)
def _vocabulary_has_what_these_tests_need() -> None:
    if not (ONLY_MEGATRON and ONLY_RL):
        pytest.skip("the schema gives RL and Megatron no groups of their own")


def test_a_spec_may_name_groups_of_every_class() -> None:
    spec = f"{ONLY_RL[0]},{ONLY_MEGATRON[0]}"
    config = NemoLensConfig(span_group_cls=BOTH, span_groups=spec)
    assert config.resolved_span_groups == {ONLY_RL[0], ONLY_MEGATRON[0]}
    with pytest.raises(ValueError, match=f"unknown span group or preset {ONLY_MEGATRON[0]!r}"):
        NemoLensConfig(span_group_cls=RLSpanGroup, span_groups=spec)


@pytest.mark.parametrize("preset", SHARED_PRESETS)
def test_same_named_presets_union(preset: str) -> None:
    config = NemoLensConfig(span_group_cls=BOTH, span_groups=preset)
    assert config.resolved_span_groups == RLSpanGroup.resolve(preset) | MegatronSpanGroup.resolve(
        preset
    )


def test_all_is_every_group_of_every_class() -> None:
    config = NemoLensConfig(span_group_cls=BOTH, span_groups="all")
    assert config.resolved_span_groups == RLSpanGroup.ALL_GROUPS | MegatronSpanGroup.ALL_GROUPS


def test_an_unknown_name_suggests_from_every_class() -> None:
    target = ONLY_MEGATRON[0]
    typo = target[:-1] + ("x" if target[-1] != "x" else "y")
    assert difflib.get_close_matches(typo, [target], n=1, cutoff=0.6) == [target]
    with pytest.raises(ValueError) as info:
        NemoLensConfig(span_group_cls=BOTH, span_groups=f"{ONLY_RL[0]},{typo}")
    message = str(info.value)
    assert f"Unknown span group or preset: {typo!r}" in message
    assert "RLSpanGroup + MegatronSpanGroup" in message
    assert f"did you mean {target!r}?" in message
    valid = message.split("valid groups:")[1]
    assert ONLY_RL[0] in valid and target in valid


def test_from_env_takes_a_tuple_of_classes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEMO_LENS_SPAN_GROUPS", f"{ONLY_RL[0]},{ONLY_MEGATRON[0]}")
    config = NemoLensConfig.from_env(span_group_cls=BOTH)
    assert config.span_group_cls == BOTH
    assert config.resolved_span_groups == {ONLY_RL[0], ONLY_MEGATRON[0]}


def test_a_bad_class_tuple_is_a_type_error_naming_the_fix() -> None:
    for bad in ((), (RLSpanGroup, "megatron")):
        with pytest.raises(TypeError) as info:
            NemoLensConfig(span_group_cls=bad)  # type: ignore[arg-type]
        assert "(RLSpanGroup, MegatronSpanGroup)" in str(info.value)


def test_set_up_emits_groups_of_both_with_the_first_class_deciding_categories() -> None:
    exporter = InMemorySpanExporter()
    config = NemoLensConfig(
        enabled=True,
        exporter="none",
        metrics_enabled=False,
        span_group_cls=BOTH,
        span_groups=f"{ONLY_RL[0]},{ONLY_MEGATRON[0]}",
    )
    setup_telemetry(config, span_exporter=exporter)
    with (
        managed_span(DynamicSpanGroup(ONLY_RL[0]), "rl.phase"),
        managed_span(DynamicSpanGroup(ONLY_MEGATRON[0]), "megatron.phase"),
    ):
        pass
    categories = categories_for(BOTH)
    tags = {
        span.name: (
            (span.attributes or {})[semconv.SPAN_GROUP],
            (span.attributes or {})[semconv.SPAN_CATEGORY],
        )
        for span in exporter.get_finished_spans()
    }
    assert tags == {
        "rl.phase": (ONLY_RL[0], categories[ONLY_RL[0]]),
        "megatron.phase": (ONLY_MEGATRON[0], categories[ONLY_MEGATRON[0]]),
    }
