# DO NOT EDIT: generated from schema/span_groups.toml by codegen.
# Edit the schema, then run `make generate`.
# schema-sha256: e6eaf32025e98ffccb04060a8aa522d8d5026bb63bde6eca057556804f1d64b0
"""The base span-group vocabulary of nemo.lens."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import ClassVar, Final, Literal, TypeAlias

from nemo.lens._names import DynamicSpanGroup
from nemo.lens._signatures import SpanGroupArg
from nemo.lens._spec import GroupInfo, SpecStep, explain_spec, resolve_spec

__all__ = [
    "DynamicSpanGroup",
    "GroupInfo",
    "SpanGroup",
    "SpanGroupArg",
    "SpanGroupName",
    "SpanGroupPresetName",
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
    "all",
]
"""Every preset name of :class:`SpanGroup`."""


class SpanGroup:
    """The base span-group vocabulary, meaningful to every consumer."""

    JOB: Final = "job"
    """Root span of the job: the whole pretrain or train run. Fires once (once per job or
    process); since 0.1.0.
    """

    LOAD_CHECKPOINT: Final = "load_checkpoint"
    """Checkpoint load at start-up. Fires once (once per job or process); since 0.1.0."""

    MODEL_INIT: Final = "model_init"
    """Model construction at start-up. Fires once (once per job or process); since 0.1.0."""

    CHECKPOINT: Final = "checkpoint"
    """Checkpoint save. Fires periodic (every N iterations); since 0.1.0."""

    EVALUATE: Final = "evaluate"
    """Evaluation pass. Fires periodic (every N iterations); since 0.1.0."""

    FORWARD_BACKWARD: Final = "forward_backward"
    """Forward and backward pass of an iteration. Fires per_step (every iteration); since 0.1.0."""

    OPTIMIZER: Final = "optimizer"
    """Optimizer step. Fires per_step (every iteration); since 0.1.0."""

    STEP: Final = "step"
    """Training-step boundary: one span per iteration. Fires per_step (every iteration); since
    0.1.0.
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

    PRESETS: ClassVar[Mapping[str, frozenset[str]]] = MappingProxyType(
        {
            "default": frozenset(
                {
                    JOB,
                    CHECKPOINT,
                    EVALUATE,
                }
            ),
            "per_step": frozenset(
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
            ),
            "all": ALL_GROUPS,
        }
    )
    """Preset name -> the groups it enables."""

    RENAMED: ClassVar[Mapping[str, str]] = MappingProxyType({})
    """Deprecated group name -> its new name; a spec naming the old one still works."""

    GROUP_INFO: ClassVar[Mapping[str, GroupInfo]] = MappingProxyType(
        {
            JOB: GroupInfo(
                name=JOB,
                description="Root span of the job: the whole pretrain or train run.",
                fires="once",
                since="0.1.0",
            ),
            LOAD_CHECKPOINT: GroupInfo(
                name=LOAD_CHECKPOINT,
                description="Checkpoint load at start-up.",
                fires="once",
                since="0.1.0",
            ),
            MODEL_INIT: GroupInfo(
                name=MODEL_INIT,
                description="Model construction at start-up.",
                fires="once",
                since="0.1.0",
            ),
            CHECKPOINT: GroupInfo(
                name=CHECKPOINT,
                description="Checkpoint save.",
                fires="periodic",
                since="0.1.0",
            ),
            EVALUATE: GroupInfo(
                name=EVALUATE,
                description="Evaluation pass.",
                fires="periodic",
                since="0.1.0",
            ),
            FORWARD_BACKWARD: GroupInfo(
                name=FORWARD_BACKWARD,
                description="Forward and backward pass of an iteration.",
                fires="per_step",
                since="0.1.0",
            ),
            OPTIMIZER: GroupInfo(
                name=OPTIMIZER,
                description="Optimizer step.",
                fires="per_step",
                since="0.1.0",
            ),
            STEP: GroupInfo(
                name=STEP,
                description="Training-step boundary: one span per iteration.",
                fires="per_step",
                since="0.1.0",
            ),
        }
    )
    """Group name -> what the schema says about it."""

    @classmethod
    def resolve(cls, spec: str) -> frozenset[str]:
        """Resolve a spec such as ``"per_step,-optimizer"`` to the enabled groups.

        Entries are comma-separated, trimmed and lower-cased, and apply left to right:
        a preset adds its groups, a group adds itself, ``-name`` removes. Raises
        ``ValueError`` naming the valid names for an unknown one.
        """
        return resolve_spec(
            spec,
            owner=cls.__name__,
            groups=cls.ALL_GROUPS,
            presets=cls.PRESETS,
            renamed=cls.RENAMED,
        )

    @classmethod
    def explain(cls, spec: str) -> tuple[frozenset[str], tuple[SpecStep, ...]]:
        """Like :meth:`resolve`, and also report what each entry turned on or off."""
        return explain_spec(
            spec,
            owner=cls.__name__,
            groups=cls.ALL_GROUPS,
            presets=cls.PRESETS,
            renamed=cls.RENAMED,
        )
