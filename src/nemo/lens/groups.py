# DO NOT EDIT: generated from schema/span_groups.toml by nemo-lens generate.
# Edit the schema, then run `make generate`.
# schema-sha256: 8ad7b6264e4b1becd966e3fd4dfd24637b8c2d7d384c289e41cc7f993ed5e1b6
"""The base span-group vocabulary of nemo.lens."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import ClassVar, Final, Literal, TypeAlias, cast

from nemo.lens.registry import SpanRegistry
from nemo.lens.spec import (
    DynamicSpanGroup,
    GroupInfo,
    SpecStep,
    by_name,
    categories_of,
    explain_for,
    resolve_for,
    with_implicit_presets,
)

__all__ = [
    "ALL_PRESET",
    "DEFAULT_PRESET",
    "GOODPUT_PRESET",
    "PER_STEP_PRESET",
    "PROFILING_PRESET",
    "AnySpanGroupName",
    "DynamicSpanGroup",
    "GroupInfo",
    "SpanGroup",
    "SpanGroupArg",
    "SpanGroupName",
    "SpanGroupPresetName",
    "SpanRegistry",
]

SpanGroupName: TypeAlias = Literal[
    "job",
    "load_checkpoint",
    "model_init",
    "checkpoint",
    "evaluate",
    "forward_backward",
    "optimizer",
    "step",
]
"""Every group name of :class:`SpanGroup`."""

SpanGroupPresetName: TypeAlias = Literal[
    "default",
    "per_step",
    "goodput",
    "profiling",
    "all",
]
"""Every preset name of :class:`SpanGroup`."""

AnySpanGroupName: TypeAlias = Literal[
    "activation_offload",
    "advantage",
    "agent",
    "checkpoint",
    "communication",
    "data_loading",
    "data_plane",
    "data_processing",
    "efficiency",
    "evaluate",
    "first_iteration",
    "forward_backward",
    "generation",
    "http_client",
    "inference",
    "job",
    "layer",
    "load_checkpoint",
    "logprob",
    "microbatch",
    "model_call",
    "model_init",
    "optimizer",
    "per_prompt",
    "policy_update",
    "reward",
    "rollout",
    "sandbox",
    "server",
    "setup",
    "step",
    "trace_region",
    "verify",
]
"""Every group name of every span-group class shipped with nemo.lens."""

SpanGroupArg: TypeAlias = AnySpanGroupName | DynamicSpanGroup
"""What nemo.lens's group-taking primitives accept: any class's group, or a DynamicSpanGroup."""


class SpanGroup:
    """The base span-group vocabulary, meaningful to every consumer."""

    JOB: Final = "job"
    """Root span of the job: the whole pretrain or train run. Fires once (once per job or
    process); goodput; since 0.1.0.
    """

    LOAD_CHECKPOINT: Final = "load_checkpoint"
    """Checkpoint load at start-up. Fires once (once per job or process); goodput, feeds
    initialization; since 0.1.0.
    """

    MODEL_INIT: Final = "model_init"
    """Model construction at start-up. Fires once (once per job or process); goodput, feeds
    initialization; since 0.1.0.
    """

    CHECKPOINT: Final = "checkpoint"
    """Checkpoint save. Fires periodic (every N iterations); goodput, feeds checkpoint_save;
    since 0.1.0.
    """

    EVALUATE: Final = "evaluate"
    """Evaluation pass. Fires periodic (every N iterations); goodput, feeds evaluation; since
    0.1.0.
    """

    FORWARD_BACKWARD: Final = "forward_backward"
    """Forward and backward pass of an iteration. Fires per_step (every iteration); profiling;
    since 0.1.0.
    """

    OPTIMIZER: Final = "optimizer"
    """Optimizer step. Fires per_step (every iteration); profiling, a synchronisation point;
    since 0.1.0.
    """

    STEP: Final = "step"
    """Training-step boundary: one span per iteration. Fires per_step (every iteration); goodput,
    feeds productive, a synchronisation point; since 0.1.0.
    """

    # Each class overrides these, so they are ClassVar rather than Final: mypy
    # forbids redefining a Final attribute in a subclass.
    ALL_GROUPS: ClassVar[frozenset[str]] = frozenset(
        {
            JOB,
            LOAD_CHECKPOINT,
            MODEL_INIT,
            CHECKPOINT,
            EVALUATE,
            FORWARD_BACKWARD,
            OPTIMIZER,
            STEP,
        }
    )
    """Every group of the class: what the ``all`` preset enables."""

    GOODPUT_GROUPS: ClassVar[frozenset[str]] = frozenset(
        {
            JOB,
            LOAD_CHECKPOINT,
            MODEL_INIT,
            CHECKPOINT,
            EVALUATE,
            STEP,
        }
    )
    """The groups whose category is ``goodput``; every other group is ``profiling``."""

    SYNC_GROUPS: ClassVar[frozenset[str]] = frozenset(
        {
            OPTIMIZER,
            STEP,
        }
    )
    """The groups that mark a synchronisation point (``sync = true``): where every rank waits
    for the others, so the rank that arrives last holds them all up (``nemo-lens stragglers``)."""

    PRESETS: ClassVar[Mapping[str, frozenset[str]]] = with_implicit_presets(
        {
            "default": frozenset(
                {
                    JOB,
                    CHECKPOINT,
                    EVALUATE,
                }
            ),
            "per_step": ALL_GROUPS,
        },
        every=ALL_GROUPS,
        goodput=GOODPUT_GROUPS,
    )
    """Preset name -> the groups it enables."""

    _PRESETS: ClassVar[Mapping[str, frozenset[str]]] = PRESETS
    """The same mapping under the name 0.1.0-style code reads (``cls._PRESETS``)."""

    RENAMED: ClassVar[Mapping[str, str]] = MappingProxyType({})
    """Deprecated group name -> its new name; a spec naming the old one still works."""

    GROUP_INFO: ClassVar[Mapping[str, GroupInfo]] = by_name(
        GroupInfo(
            JOB,
            "Root span of the job: the whole pretrain or train run.",
            "once",
            "0.1.0",
            category="goodput",
        ),
        GroupInfo(
            LOAD_CHECKPOINT,
            "Checkpoint load at start-up.",
            "once",
            "0.1.0",
            category="goodput",
            bucket="initialization",
        ),
        GroupInfo(
            MODEL_INIT,
            "Model construction at start-up.",
            "once",
            "0.1.0",
            category="goodput",
            bucket="initialization",
        ),
        GroupInfo(
            CHECKPOINT,
            "Checkpoint save.",
            "periodic",
            "0.1.0",
            category="goodput",
            bucket="checkpoint_save",
        ),
        GroupInfo(
            EVALUATE,
            "Evaluation pass.",
            "periodic",
            "0.1.0",
            category="goodput",
            bucket="evaluation",
        ),
        GroupInfo(
            FORWARD_BACKWARD,
            "Forward and backward pass of an iteration.",
            "per_step",
            "0.1.0",
        ),
        GroupInfo(
            OPTIMIZER,
            "Optimizer step.",
            "per_step",
            "0.1.0",
            sync=True,
        ),
        GroupInfo(
            STEP,
            "Training-step boundary: one span per iteration.",
            "per_step",
            "0.1.0",
            category="goodput",
            bucket="productive",
            sync=True,
        ),
    )
    """Group name -> what the schema says about it."""

    @classmethod
    def resolve(cls, spec: str) -> frozenset[str]:
        """Resolve a spec such as ``"per_step,-optimizer"`` to the enabled groups.

        Entries are comma-separated, trimmed and lower-cased, and apply left to right:
        a preset adds its groups, a group adds itself, ``-name`` removes. Raises
        ``ValueError`` naming the valid names for an unknown one.
        """
        return resolve_for(spec, cls)

    @classmethod
    def explain(cls, spec: str) -> tuple[frozenset[str], tuple[SpecStep, ...]]:
        """Like :meth:`resolve`, and also report what each entry turned on or off."""
        return explain_for(spec, cls)

    @classmethod
    def categories(cls) -> Mapping[str, str]:
        """``{group: "goodput" | "profiling"}`` for every group of the class."""
        return categories_of(cls)


# Each preset of the class as a typed, immutable constant: the very set PRESETS holds.
_TYPED_PRESETS: Final = cast(
    "Mapping[SpanGroupPresetName, frozenset[SpanGroupName]]",
    SpanGroup.PRESETS,
)

DEFAULT_PRESET: Final = _TYPED_PRESETS["default"]
"""The 'default' preset of SpanGroup. Production: structural, job-level spans only."""

PER_STEP_PRESET: Final = _TYPED_PRESETS["per_step"]
"""The 'per_step' preset of SpanGroup. Every iteration: start-up phases, steps, forward/backward
and optimizer.
"""

GOODPUT_PRESET: Final = _TYPED_PRESETS["goodput"]
"""The 'goodput' preset of SpanGroup. The goodput groups: semantic boundaries of useful or
resiliency time.
"""

PROFILING_PRESET: Final = _TYPED_PRESETS["profiling"]
"""The 'profiling' preset of SpanGroup. Every group: the fine-grained detail too, for profiling."""

ALL_PRESET: Final = PROFILING_PRESET
"""The 'all' preset of SpanGroup. Every group of the class."""
