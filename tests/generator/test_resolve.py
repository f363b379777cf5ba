"""Every shipped class resolves the SPEC grammar: groups, presets, removal, errors."""

from __future__ import annotations

import pytest

from nemo.lens.consumers.gym import GymSpanGroup
from nemo.lens.consumers.megatron import MegatronSpanGroup
from nemo.lens.consumers.rl import RLSpanGroup
from nemo.lens.groups import SpanGroup

CLASSES = [SpanGroup, MegatronSpanGroup, RLSpanGroup, GymSpanGroup]
BASE = {
    "job",
    "checkpoint",
    "evaluate",
    "model_init",
    "load_checkpoint",
    "step",
    "forward_backward",
    "optimizer",
}

# The vocabulary the SPEC fixes, written out independently of the schema.
EXPECTED_PRESETS: dict[type[SpanGroup], dict[str, set[str]]] = {
    SpanGroup: {"default": {"job", "checkpoint", "evaluate"}, "per_step": BASE},
    MegatronSpanGroup: {
        "default": {"job", "checkpoint", "evaluate", "inference"},
        "per_step": {"job", "checkpoint", "evaluate", "inference", "model_init"}
        | {"load_checkpoint", "step", "forward_backward", "optimizer", "communication"}
        | {"data_loading", "first_iteration"},
    },
    RLSpanGroup: {
        "default": {"job", "checkpoint", "evaluate", "model_init", "setup"},
        "per_step": {"job", "checkpoint", "evaluate", "model_init", "setup", "step", "rollout"}
        | {"generation", "logprob", "reward", "advantage", "policy_update"}
        | {"data_processing", "data_plane", "efficiency"},
    },
    GymSpanGroup: {
        "default": {"job", "server", "http_client", "rollout"},
        "per_rollout": {"server", "http_client", "rollout", "verify", "agent", "model_call"},
    },
}
EXPECTED_OWN = {
    SpanGroup: BASE,
    MegatronSpanGroup: {"microbatch", "layer", "communication", "activation_offload"}
    | {"data_loading", "inference", "first_iteration"},
    RLSpanGroup: {"setup", "rollout", "generation", "logprob", "reward", "advantage"}
    | {"policy_update", "data_processing", "data_plane", "per_prompt", "efficiency"},
    GymSpanGroup: {"server", "http_client", "rollout", "verify", "agent", "model_call", "sandbox"},
}


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_all_groups_is_base_plus_own(cls: type[SpanGroup]) -> None:
    assert cls.ALL_GROUPS == BASE | EXPECTED_OWN[cls]
    for name in EXPECTED_OWN[cls]:
        assert getattr(cls, name.upper()) == name


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_every_group_resolves_from_its_bare_name(cls: type[SpanGroup]) -> None:
    for name in cls.ALL_GROUPS:
        assert cls.resolve(name) == {name}


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_presets_resolve_to_exactly_their_members(cls: type[SpanGroup]) -> None:
    expected = {**EXPECTED_PRESETS[cls], "all": set(cls.ALL_GROUPS)}
    assert set(cls.PRESETS) == set(expected)
    for preset, members in expected.items():
        resolved = cls.resolve(preset)
        assert resolved == members
        assert not (cls.ALL_GROUPS - members) & resolved


def test_spec_facts_from_the_design() -> None:
    assert "communication" in MegatronSpanGroup.resolve("per_step")
    assert "communication" not in MegatronSpanGroup.resolve("default")
    assert "layer" in MegatronSpanGroup.resolve("all")
    assert "per_prompt" not in RLSpanGroup.resolve("per_step")
    assert "per_prompt" in RLSpanGroup.resolve("all")


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("", set()),
        (" , ,", set()),
        ("default", {"job", "checkpoint", "evaluate"}),
        ("default,step", {"job", "checkpoint", "evaluate", "step"}),
        ("  Default , STEP ", {"job", "checkpoint", "evaluate", "step"}),
        ("per_step,-optimizer", BASE - {"optimizer"}),
        ("all,-default", BASE - {"job", "checkpoint", "evaluate"}),
        ("-step,step", {"step"}),
        ("step,-step", set()),
        ("all, - optimizer", BASE - {"optimizer"}),
    ],
)
def test_grammar(spec: str, expected: set[str]) -> None:
    assert SpanGroup.resolve(spec) == expected


def test_removal_in_a_consumer_class() -> None:
    assert MegatronSpanGroup.resolve("all,-layer") == MegatronSpanGroup.ALL_GROUPS - {"layer"}


def test_unknown_name_lists_valid_names_and_suggests() -> None:
    with pytest.raises(ValueError) as info:
        MegatronSpanGroup.resolve("per_step,microbath")
    message = str(info.value)
    assert message.startswith(
        "unknown span group or preset 'microbath' for MegatronSpanGroup; did you mean 'microbatch'?"
    )
    assert "valid presets: all, default, per_step" in message
    assert "valid groups: activation_offload, checkpoint, communication," in message


def test_a_consumer_name_is_unknown_to_the_base_class() -> None:
    with pytest.raises(ValueError, match="'layer' for SpanGroup"):
        SpanGroup.resolve("layer")


@pytest.mark.parametrize("spec", ["-", "default,-"])
def test_a_bare_minus_is_an_error(spec: str) -> None:
    with pytest.raises(ValueError, match="removes nothing"):
        SpanGroup.resolve(spec)


def test_a_non_string_spec_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="must be a str"):
        SpanGroup.resolve(["default"])  # type: ignore[arg-type]


def test_explain_says_which_entry_did_what() -> None:
    enabled, steps = SpanGroup.explain("per_step,-optimizer,optimizer")
    assert enabled == BASE
    assert [(s.entry, sorted(s.added), sorted(s.removed)) for s in steps] == [
        ("per_step", sorted(BASE), []),
        ("-optimizer", [], ["optimizer"]),
        ("optimizer", ["optimizer"], []),
    ]
