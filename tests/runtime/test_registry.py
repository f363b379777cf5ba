"""SpanRegistry (upstream's run-time registry): its semantics, and one system with the schema."""

from __future__ import annotations

import inspect
import logging
import subprocess
import sys
from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from nemo.lens import fallbacks, registry
from nemo.lens._core import state as core_state
from nemo.lens.config import NemoLensConfig
from nemo.lens.consumers.megatron import MegatronSpanGroup
from nemo.lens.groups import SpanGroup, SpanRegistry
from nemo.lens.handle import setup_telemetry
from nemo.lens.helpers import managed_span
from nemo.lens.spec import DynamicSpanGroup, presets_of
from nemo.lens.state import (
    enabled_span_groups,
    is_span_group_enabled,
    pending_span_groups,
    set_enabled_span_groups,
    set_span_group_spec,
)


@pytest.fixture(autouse=True)
def _restore_registry() -> Iterator[None]:
    # The generated modules register once, when imported: put their registrations back.
    saved = (dict(registry._groups), dict(registry._presets), set(registry._vocabulary))
    yield
    set_enabled_span_groups(())
    registry._groups.clear()
    registry._groups.update(saved[0])
    registry._presets.clear()
    registry._presets.update(saved[1])
    registry._vocabulary.clear()
    registry._vocabulary.update(saved[2])


def test_register_resolve_unregister_clear() -> None:
    SpanRegistry.register("nvrx", {"nvrx.ckpt.phases", "Restart"}, {"default": {"restart"}})
    assert {"nvrx.ckpt.phases", "restart"} <= SpanRegistry.groups()
    assert "nvrx" in SpanRegistry.namespaces()
    assert SpanRegistry.resolve("default, -restart,nvrx.ckpt.phases,nope") == (
        frozenset({"nvrx.ckpt.phases"}) | (SpanRegistry.presets()["default"] - {"restart"}),
        frozenset({"nope"}),
    )
    with pytest.raises(ValueError, match="already registered"):
        SpanRegistry.register("nvrx", {"other"})
    SpanRegistry.register("nvrx", {"other"}, allow_override=True)
    assert "restart" not in SpanRegistry.groups()
    SpanRegistry.unregister("nvrx")
    assert "nvrx" not in SpanRegistry.namespaces()
    with pytest.raises(ValueError, match="not registered"):
        SpanRegistry.unregister("nvrx")
    SpanRegistry.clear()
    assert SpanRegistry.namespaces() == []
    assert SpanRegistry.presets() == {"all": frozenset()}


@pytest.mark.parametrize(
    ("groups", "presets"),
    [({"all"}, None), ({""}, None), ({"a"}, {"all": {"a"}}), ({"a"}, {"p": {" "}})],
)
def test_reserved_and_empty_names_are_refused(
    groups: set[str], presets: dict[str, set[str]] | None
) -> None:
    with pytest.raises(ValueError, match=r"reserved|empty"):
        SpanRegistry.register("ns", groups, presets)
    assert "ns" not in SpanRegistry.namespaces()


def test_presets_union_across_namespaces_and_all_covers_every_group() -> None:
    SpanRegistry.clear()
    SpanRegistry.register("a", {"a1", "a2"}, {"default": {"a1"}, "late": {"b1"}})
    assert SpanRegistry.presets()["late"] == frozenset()  # b1 not registered yet
    SpanRegistry.register("b", {"b1"}, {"default": {"b1"}})
    presets = SpanRegistry.presets()
    assert presets["default"] == {"a1", "b1"}
    assert presets["late"] == {"b1"}
    assert presets["all"] == {"a1", "a2", "b1"}


def test_a_clash_with_another_library_warns(caplog: pytest.LogCaptureFixture) -> None:
    SpanRegistry.register("a", {"shared"})
    with caplog.at_level(logging.WARNING, "nemo.lens.registry"):
        SpanRegistry.register("b", {"shared", "job"})
    # Sharing the generated vocabulary's "job" is by design; sharing another library's is not.
    assert [r.getMessage().count("'a'") for r in caplog.records] == [1]


def test_generated_classes_are_registered_on_import() -> None:
    namespaces = SpanRegistry.namespaces()
    assert "nemo.lens.consumers.megatron" in namespaces
    assert "nemo.lens.groups" not in namespaces  # the base ships no groups into it
    assert MegatronSpanGroup.ALL_GROUPS <= SpanRegistry.groups()
    assert presets_of(MegatronSpanGroup)["per_step"] <= SpanRegistry.presets()["per_step"]
    enabled, pending = SpanRegistry.resolve("layer,per_step")
    assert "layer" in enabled and not pending


def test_unknown_spec_entries_stay_pending_and_resolve_when_registered(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, "nemo.lens.state"):
        set_span_group_spec("job,gym2.rollout")
    assert is_span_group_enabled("job")
    assert not is_span_group_enabled(DynamicSpanGroup("gym2.rollout"))
    assert pending_span_groups() == {"gym2.rollout"}
    assert "gym2.rollout" in caplog.text
    SpanRegistry.register("gym2", {"gym2.rollout"})
    assert is_span_group_enabled(DynamicSpanGroup("gym2.rollout"))
    assert pending_span_groups() == frozenset()
    # The hot path still reads one frozenset.
    assert type(core_state.enabled) is frozenset
    assert "gym2.rollout" in core_state.enabled


def test_an_explicit_set_pins_the_groups() -> None:
    set_span_group_spec("all")
    set_enabled_span_groups({"job"})
    SpanRegistry.register("late", {"late.x"})
    assert enabled_span_groups() == {"job"}


def test_a_hand_registered_group_is_enabled_and_gated_like_a_generated_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    SpanRegistry.register("mine", {"mine.phase", "mine.detail"}, {"per_step": {"mine.phase"}})
    monkeypatch.setenv("NEMO_LENS_SPAN_GROUPS", "per_step,mine.detail,-mine.detail")
    config = NemoLensConfig.from_env()
    config.enabled = True
    config.exporter = "none"
    config.metrics_enabled = False
    assert config.resolved_span_groups == SpanGroup.resolve("per_step") | {"mine.phase"}
    exporter = InMemorySpanExporter()
    setup_telemetry(config, span_exporter=exporter)
    for group in ("step", "mine.phase", "mine.detail"):
        # A name only known at run time is typed as one (DynamicSpanGroup).
        with managed_span(DynamicSpanGroup(group), f"span of {group}"):
            pass
    assert [s.name for s in exporter.get_finished_spans()] == [
        "span of step",
        "span of mine.phase",
    ]
    assert dict(exporter.get_finished_spans()[1].attributes or {})["lens.group"] == "mine.phase"


def test_a_namespace_registered_after_set_up_joins_the_jobs_spec() -> None:
    config = NemoLensConfig(
        enabled=True, exporter="none", metrics_enabled=False, span_groups="per_step,-optimizer"
    )
    setup_telemetry(config)
    assert enabled_span_groups() == SpanGroup.resolve("per_step,-optimizer")
    # A library imported after set-up: its per_step preset joins, its other group does not.
    SpanRegistry.register("late", {"late.phase", "late.detail"}, {"per_step": {"late.phase"}})
    assert is_span_group_enabled(DynamicSpanGroup("late.phase"))
    assert not is_span_group_enabled(DynamicSpanGroup("late.detail"))
    assert not is_span_group_enabled("optimizer")  # the job's exclusion still holds
    SpanRegistry.unregister("late")
    assert enabled_span_groups() == SpanGroup.resolve("per_step,-optimizer")


def test_a_job_spec_entry_whose_namespace_left_is_pending(
    caplog: pytest.LogCaptureFixture,
) -> None:
    SpanRegistry.register("mine", {"mine.x"})
    config = NemoLensConfig(enabled=True, exporter="none", metrics_enabled=False)
    config.span_groups = "job,mine.x"
    setup_telemetry(config)
    assert enabled_span_groups() == {"job", "mine.x"}
    SpanRegistry.unregister("mine")  # no error escapes into the unregistering library
    assert enabled_span_groups() == {"job"}
    assert pending_span_groups() == {"mine.x"}
    assert "mine.x" in caplog.text
    SpanRegistry.register("mine", {"mine.x"})
    assert enabled_span_groups() == {"job", "mine.x"}


def test_testing_reset_forgets_hand_registered_namespaces_only() -> None:
    from nemo.lens import testing

    generated = SpanRegistry.namespaces()
    SpanRegistry.register("mine", {"mine.x"})
    testing.reset()
    assert SpanRegistry.namespaces() == generated
    assert "mine.x" not in SpanRegistry.groups()


def test_the_job_spec_keeps_the_class_meaning_and_strictness() -> None:
    # Another generated class's groups do not join a config that names SpanGroup.
    assert NemoLensConfig(span_groups="all").resolved_span_groups == SpanGroup.ALL_GROUPS
    with pytest.raises(ValueError, match="Unknown span group or preset: 'layer'"):
        _ = NemoLensConfig(span_groups="layer").resolved_span_groups
    SpanRegistry.register("mine", {"mine.x"})
    assert "mine.x" in NemoLensConfig(span_groups="all").resolved_span_groups
    with pytest.raises(ValueError, match="Unknown span group or preset"):
        SpanGroup.resolve("mine.x")


def test_the_fallback_registry_keeps_nothing() -> None:
    fallbacks.SpanRegistry.register("x", {"a"}, {"p": {"a"}}, allow_override=True)
    fallbacks.SpanRegistry.unregister("x")
    fallbacks.SpanRegistry.clear()
    assert fallbacks.SpanRegistry.groups() == frozenset()
    assert fallbacks.SpanRegistry.namespaces() == []
    assert fallbacks.SpanRegistry.presets() == {"all": frozenset()}
    assert fallbacks.SpanRegistry.resolve("a, B ,") == (frozenset(), frozenset({"a", "b"}))
    assert "x" not in SpanRegistry.namespaces()


@pytest.mark.parametrize(
    "method", ["register", "unregister", "clear", "groups", "namespaces", "presets", "resolve"]
)
def test_the_fallback_registry_has_the_real_signatures(method: str) -> None:
    real = inspect.signature(getattr(SpanRegistry, method))
    assert inspect.signature(getattr(fallbacks.SpanRegistry, method)) == real


def test_a_fresh_process_starts_with_an_empty_registry_as_upstreams() -> None:
    # A library that resolves through the registry sees only what was registered (NeMo-Gym's
    # tests assert its default preset is its own groups); a generated consumer module
    # imported later registers, and the stored spec picks its groups up.
    code = (
        "import nemo.lens\n"
        "from nemo.lens.groups import SpanRegistry\n"
        "from nemo.lens.state import set_span_group_spec, enabled_span_groups\n"
        "print(SpanRegistry.namespaces(), sorted(SpanRegistry.resolve('default')[0]))\n"
        "set_span_group_spec('job')\n"
        "print(sorted(enabled_span_groups()))\n"
        "import nemo.lens.consumers.gym\n"
        "print(sorted(enabled_span_groups()))\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert completed.stdout.splitlines() == ["[] []", "[]", "['job']"]
