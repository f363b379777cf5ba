# DO NOT EDIT: generated from schema/span_groups.toml by nemo-lens generate.
# Edit the schema, then run `make generate`.
# schema-sha256: 8ad7b6264e4b1becd966e3fd4dfd24637b8c2d7d384c289e41cc7f993ed5e1b6
"""RLSpanGroup, the span groups of the 'rl' consumer."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar, Final, Literal, TypeAlias, TypeVar, cast

from nemo.lens.groups import SpanGroup
from nemo.lens.registry import register_span_group_class as _register_class
from nemo.lens.spec import (
    DynamicSpanGroup,
    GroupInfo,
    by_name,
    primitives_getattr,
    with_implicit_presets,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from contextlib import AbstractContextManager

    from opentelemetry.trace import Link, Span, SpanKind, Tracer

    _F = TypeVar("_F", bound=Callable[..., Any])

__all__ = [
    "ALL_PRESET",
    "DEFAULT_PRESET",
    "GOODPUT_PRESET",
    "PER_STEP_PRESET",
    "PROFILING_PRESET",
    "RLSpanGroup",
    "RLSpanGroupName",
    "RLSpanGroupPresetName",
    "is_span_group_enabled",
    "managed_span",
    "trace_fn",
]

RLSpanGroupName: TypeAlias = Literal[
    "job",
    "load_checkpoint",
    "model_init",
    "setup",
    "checkpoint",
    "evaluate",
    "advantage",
    "data_processing",
    "efficiency",
    "forward_backward",
    "generation",
    "logprob",
    "optimizer",
    "policy_update",
    "reward",
    "rollout",
    "step",
    "data_plane",
    "per_prompt",
]
"""Every group name of :class:`RLSpanGroup`, inherited ones included."""

RLSpanGroupPresetName: TypeAlias = Literal[
    "default",
    "per_step",
    "goodput",
    "profiling",
    "all",
]
"""Every preset name of :class:`RLSpanGroup`."""


class RLSpanGroup(SpanGroup):
    """Span groups for reinforcement-learning loops (rollout, scoring, policy update)."""

    SETUP: Final = "setup"
    """Driver start-up phases. Fires once (once per job or process); goodput, feeds
    initialization; since 0.1.0.
    """

    ADVANTAGE: Final = "advantage"
    """Advantage estimation. Fires per_step (every iteration); profiling; since 0.1.0."""

    DATA_PROCESSING: Final = "data_processing"
    """Batch assembly and data processing between phases. Fires per_step (every iteration);
    profiling; since 0.1.0.
    """

    EFFICIENCY: Final = "efficiency"
    """Idle and wasted-time accounting. Fires per_step (every iteration); goodput; since 0.1.0."""

    GENERATION: Final = "generation"
    """Generation of responses by the policy. Fires per_step (every iteration); profiling; since
    0.1.0.
    """

    LOGPROB: Final = "logprob"
    """Log-probability computation for generated responses. Fires per_step (every iteration);
    profiling; since 0.1.0.
    """

    POLICY_UPDATE: Final = "policy_update"
    """Policy update (the training half of an RL step). Fires per_step (every iteration);
    profiling; since 0.1.0.
    """

    REWARD: Final = "reward"
    """Reward computation. Fires per_step (every iteration); profiling; since 0.1.0."""

    ROLLOUT: Final = "rollout"
    """Rollout phase of an RL step. Fires per_step (every iteration); profiling; since 0.1.0."""

    DATA_PLANE: Final = "data_plane"
    """Data-transfer RPCs between workers. Fires per_request (every request); profiling; since
    0.1.0.
    """

    PER_PROMPT: Final = "per_prompt"
    """Per-prompt spans: about two spans for every prompt. Fires per_item (every item of a
    batch); profiling; since 0.1.0.
    """

    # Each class overrides these, so they are ClassVar rather than Final: mypy
    # forbids redefining a Final attribute in a subclass.
    ALL_GROUPS: ClassVar[frozenset[str]] = SpanGroup.ALL_GROUPS | frozenset(
        {
            SETUP,
            ADVANTAGE,
            DATA_PROCESSING,
            EFFICIENCY,
            GENERATION,
            LOGPROB,
            POLICY_UPDATE,
            REWARD,
            ROLLOUT,
            DATA_PLANE,
            PER_PROMPT,
        }
    )
    """Every group of the class: what the ``all`` preset enables."""

    GOODPUT_GROUPS: ClassVar[frozenset[str]] = frozenset(
        {
            SpanGroup.JOB,
            SpanGroup.LOAD_CHECKPOINT,
            SpanGroup.MODEL_INIT,
            SETUP,
            SpanGroup.CHECKPOINT,
            SpanGroup.EVALUATE,
            EFFICIENCY,
            SpanGroup.STEP,
        }
    )
    """The groups whose category is ``goodput``; every other group is ``profiling``."""

    SYNC_GROUPS: ClassVar[frozenset[str]] = frozenset(
        {
            SpanGroup.OPTIMIZER,
            SpanGroup.STEP,
        }
    )
    """The groups that mark a synchronisation point (``sync = true``): where every rank waits
    for the others, so the rank that arrives last holds them all up (``nemo-lens stragglers``)."""

    PRESETS: ClassVar[Mapping[str, frozenset[str]]] = with_implicit_presets(
        {
            "default": frozenset(
                {
                    SpanGroup.JOB,
                    SpanGroup.MODEL_INIT,
                    SETUP,
                    SpanGroup.CHECKPOINT,
                    SpanGroup.EVALUATE,
                }
            ),
            "per_step": frozenset(
                {
                    SpanGroup.JOB,
                    SpanGroup.LOAD_CHECKPOINT,
                    SpanGroup.MODEL_INIT,
                    SETUP,
                    SpanGroup.CHECKPOINT,
                    SpanGroup.EVALUATE,
                    ADVANTAGE,
                    DATA_PROCESSING,
                    EFFICIENCY,
                    SpanGroup.FORWARD_BACKWARD,
                    GENERATION,
                    LOGPROB,
                    SpanGroup.OPTIMIZER,
                    POLICY_UPDATE,
                    REWARD,
                    ROLLOUT,
                    SpanGroup.STEP,
                    DATA_PLANE,
                }
            ),
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
        *SpanGroup.GROUP_INFO.values(),
        GroupInfo(
            SETUP,
            "Driver start-up phases.",
            "once",
            "0.1.0",
            category="goodput",
            bucket="initialization",
        ),
        GroupInfo(
            ADVANTAGE,
            "Advantage estimation.",
            "per_step",
            "0.1.0",
        ),
        GroupInfo(
            DATA_PROCESSING,
            "Batch assembly and data processing between phases.",
            "per_step",
            "0.1.0",
        ),
        GroupInfo(
            EFFICIENCY,
            "Idle and wasted-time accounting.",
            "per_step",
            "0.1.0",
            category="goodput",
        ),
        GroupInfo(
            GENERATION,
            "Generation of responses by the policy.",
            "per_step",
            "0.1.0",
        ),
        GroupInfo(
            LOGPROB,
            "Log-probability computation for generated responses.",
            "per_step",
            "0.1.0",
        ),
        GroupInfo(
            POLICY_UPDATE,
            "Policy update (the training half of an RL step).",
            "per_step",
            "0.1.0",
        ),
        GroupInfo(
            REWARD,
            "Reward computation.",
            "per_step",
            "0.1.0",
        ),
        GroupInfo(
            ROLLOUT,
            "Rollout phase of an RL step.",
            "per_step",
            "0.1.0",
        ),
        GroupInfo(
            DATA_PLANE,
            "Data-transfer RPCs between workers.",
            "per_request",
            "0.1.0",
        ),
        GroupInfo(
            PER_PROMPT,
            "Per-prompt spans: about two spans for every prompt.",
            "per_item",
            "0.1.0",
        ),
    )
    """Group name -> what the schema says about it."""


# Each preset of the class as a typed, immutable constant: the very set PRESETS holds.
_TYPED_PRESETS: Final = cast(
    "Mapping[RLSpanGroupPresetName, frozenset[RLSpanGroupName]]",
    RLSpanGroup.PRESETS,
)

DEFAULT_PRESET: Final = _TYPED_PRESETS["default"]
"""The 'default' preset of RLSpanGroup. Production: job-level spans, model construction and
driver set-up.
"""

PER_STEP_PRESET: Final = _TYPED_PRESETS["per_step"]
"""The 'per_step' preset of RLSpanGroup. Every RL step phase, without the per-prompt spans."""

GOODPUT_PRESET: Final = _TYPED_PRESETS["goodput"]
"""The 'goodput' preset of RLSpanGroup. The goodput groups: semantic boundaries of useful or
resiliency time.
"""

PROFILING_PRESET: Final = _TYPED_PRESETS["profiling"]
"""The 'profiling' preset of RLSpanGroup. Every group: the fine-grained detail too, for
profiling.
"""

ALL_PRESET: Final = PROFILING_PRESET
"""The 'all' preset of RLSpanGroup. Every group of the class."""


# managed_span, trace_fn and is_span_group_enabled of nemo.lens, re-exported with
# the group parameter typed for this class: code that instruments with its own
# groups imports them from here. They are the very same functions at run time.
if TYPE_CHECKING:

    def managed_span(
        group: RLSpanGroupName | DynamicSpanGroup,
        name: str,
        tracer: Tracer | None = None,
        *,
        kind: SpanKind | None = None,
        links: Sequence[Link] | None = None,
        **attributes: object,
    ) -> AbstractContextManager[Span | None]:
        """:func:`nemo.lens.managed_span`, checked against the groups of :class:`RLSpanGroup`."""
        ...

    def trace_fn(
        group: RLSpanGroupName | DynamicSpanGroup,
        name: str,
        tracer: Tracer | None = None,
    ) -> Callable[[_F], _F]:
        """:func:`nemo.lens.trace_fn`, checked against the groups of :class:`RLSpanGroup`."""
        ...

    def is_span_group_enabled(
        group: RLSpanGroupName | DynamicSpanGroup,
    ) -> bool:
        """:func:`nemo.lens.is_span_group_enabled`, checked against the groups of
        :class:`RLSpanGroup`.
        """
        ...
else:
    # Imported on first use, so importing this module stays free of OpenTelemetry.
    __getattr__ = primitives_getattr(__name__, globals())

# One system with the run-time registry: the class's groups and presets, registered on import.
_register_class(RLSpanGroup)
