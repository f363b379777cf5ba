# DO NOT EDIT: generated from schema/span_groups.toml by nemo-lens generate.
# Edit the schema, then run `make generate`.
# schema-sha256: 8ad7b6264e4b1becd966e3fd4dfd24637b8c2d7d384c289e41cc7f993ed5e1b6
"""MegatronSpanGroup, the span groups of the 'megatron' consumer."""

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
    "MegatronSpanGroup",
    "MegatronSpanGroupName",
    "MegatronSpanGroupPresetName",
    "is_span_group_enabled",
    "managed_span",
    "trace_fn",
]

MegatronSpanGroupName: TypeAlias = Literal[
    "first_iteration",
    "job",
    "load_checkpoint",
    "model_init",
    "checkpoint",
    "evaluate",
    "data_loading",
    "forward_backward",
    "optimizer",
    "step",
    "communication",
    "microbatch",
    "trace_region",
    "activation_offload",
    "layer",
    "inference",
]
"""Every group name of :class:`MegatronSpanGroup`, inherited ones included."""

MegatronSpanGroupPresetName: TypeAlias = Literal[
    "default",
    "per_step",
    "goodput",
    "profiling",
    "all",
]
"""Every preset name of :class:`MegatronSpanGroup`."""


class MegatronSpanGroup(SpanGroup):
    """Span groups for Megatron-style pretraining and inference."""

    FIRST_ITERATION: Final = "first_iteration"
    """The first iteration this process executed: warm-up costs (compilation, graph capture).
    Fires once (once per job or process); goodput, feeds initialization; since 0.1.0.
    """

    DATA_LOADING: Final = "data_loading"
    """Batch preparation and data loading. Fires per_step (every iteration); goodput, feeds
    data_loading; since 0.1.0.
    """

    COMMUNICATION: Final = "communication"
    """P2P send/recv and gradient all-reduce / reduce-scatter. Fires per_microbatch (every
    microbatch); profiling, a synchronisation point; since 0.1.0.
    """

    MICROBATCH: Final = "microbatch"
    """Forward and backward pass of one microbatch. Fires per_microbatch (every microbatch);
    profiling; since 0.1.0.
    """

    TRACE_REGION: Final = "trace_region"
    """Fine-grained markers around regions of interest inside an iteration. Fires per_microbatch
    (every microbatch); profiling; since 0.2.0.
    """

    ACTIVATION_OFFLOAD: Final = "activation_offload"
    """Activation offload to the CPU and reload to the GPU. Fires per_layer (every layer of every
    microbatch); profiling; since 0.1.0.
    """

    LAYER: Final = "layer"
    """Forward pass of one transformer layer. Fires per_layer (every layer of every microbatch);
    profiling; since 0.1.0.
    """

    INFERENCE: Final = "inference"
    """Requests served by the inference server. Fires per_request (every request); profiling;
    since 0.1.0.
    """

    # Each class overrides these, so they are ClassVar rather than Final: mypy
    # forbids redefining a Final attribute in a subclass.
    ALL_GROUPS: ClassVar[frozenset[str]] = SpanGroup.ALL_GROUPS | frozenset(
        {
            FIRST_ITERATION,
            DATA_LOADING,
            COMMUNICATION,
            MICROBATCH,
            TRACE_REGION,
            ACTIVATION_OFFLOAD,
            LAYER,
            INFERENCE,
        }
    )
    """Every group of the class: what the ``all`` preset enables."""

    GOODPUT_GROUPS: ClassVar[frozenset[str]] = frozenset(
        {
            FIRST_ITERATION,
            SpanGroup.JOB,
            SpanGroup.LOAD_CHECKPOINT,
            SpanGroup.MODEL_INIT,
            SpanGroup.CHECKPOINT,
            DATA_LOADING,
            SpanGroup.STEP,
        }
    )
    """The groups whose category is ``goodput``; every other group is ``profiling``."""

    SYNC_GROUPS: ClassVar[frozenset[str]] = frozenset(
        {
            SpanGroup.OPTIMIZER,
            SpanGroup.STEP,
            COMMUNICATION,
        }
    )
    """The groups that mark a synchronisation point (``sync = true``): where every rank waits
    for the others, so the rank that arrives last holds them all up (``nemo-lens stragglers``)."""

    PRESETS: ClassVar[Mapping[str, frozenset[str]]] = with_implicit_presets(
        {
            "default": frozenset(
                {
                    FIRST_ITERATION,
                    SpanGroup.JOB,
                    SpanGroup.CHECKPOINT,
                    SpanGroup.EVALUATE,
                    INFERENCE,
                }
            ),
            "per_step": frozenset(
                {
                    FIRST_ITERATION,
                    SpanGroup.JOB,
                    SpanGroup.LOAD_CHECKPOINT,
                    SpanGroup.MODEL_INIT,
                    SpanGroup.CHECKPOINT,
                    SpanGroup.EVALUATE,
                    DATA_LOADING,
                    SpanGroup.FORWARD_BACKWARD,
                    SpanGroup.OPTIMIZER,
                    SpanGroup.STEP,
                    COMMUNICATION,
                    INFERENCE,
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
        SpanGroup.GROUP_INFO[SpanGroup.EVALUATE]._replace(
            category="profiling",
        ),
        GroupInfo(
            FIRST_ITERATION,
            (
                "The first iteration this process executed: warm-up costs (compilation, graph "
                "capture)."
            ),
            "once",
            "0.1.0",
            category="goodput",
            bucket="initialization",
        ),
        GroupInfo(
            DATA_LOADING,
            "Batch preparation and data loading.",
            "per_step",
            "0.1.0",
            category="goodput",
            bucket="data_loading",
        ),
        GroupInfo(
            COMMUNICATION,
            "P2P send/recv and gradient all-reduce / reduce-scatter.",
            "per_microbatch",
            "0.1.0",
            sync=True,
        ),
        GroupInfo(
            MICROBATCH,
            "Forward and backward pass of one microbatch.",
            "per_microbatch",
            "0.1.0",
        ),
        GroupInfo(
            TRACE_REGION,
            "Fine-grained markers around regions of interest inside an iteration.",
            "per_microbatch",
            "0.2.0",
        ),
        GroupInfo(
            ACTIVATION_OFFLOAD,
            "Activation offload to the CPU and reload to the GPU.",
            "per_layer",
            "0.1.0",
        ),
        GroupInfo(
            LAYER,
            "Forward pass of one transformer layer.",
            "per_layer",
            "0.1.0",
        ),
        GroupInfo(
            INFERENCE,
            "Requests served by the inference server.",
            "per_request",
            "0.1.0",
        ),
    )
    """Group name -> what the schema says about it."""


# Each preset of the class as a typed, immutable constant: the very set PRESETS holds.
_TYPED_PRESETS: Final = cast(
    "Mapping[MegatronSpanGroupPresetName, frozenset[MegatronSpanGroupName]]",
    MegatronSpanGroup.PRESETS,
)

DEFAULT_PRESET: Final = _TYPED_PRESETS["default"]
"""The 'default' preset of MegatronSpanGroup. Production: job-level spans, the first-iteration
warm-up and inference requests.
"""

PER_STEP_PRESET: Final = _TYPED_PRESETS["per_step"]
"""The 'per_step' preset of MegatronSpanGroup. Every iteration, with communication and data
loading.
"""

GOODPUT_PRESET: Final = _TYPED_PRESETS["goodput"]
"""The 'goodput' preset of MegatronSpanGroup. The goodput groups: semantic boundaries of useful
or resiliency time.
"""

PROFILING_PRESET: Final = _TYPED_PRESETS["profiling"]
"""The 'profiling' preset of MegatronSpanGroup. Every group: the fine-grained detail too, for
profiling.
"""

ALL_PRESET: Final = PROFILING_PRESET
"""The 'all' preset of MegatronSpanGroup. Every group of the class."""


# managed_span, trace_fn and is_span_group_enabled of nemo.lens, re-exported with
# the group parameter typed for this class: code that instruments with its own
# groups imports them from here. They are the very same functions at run time.
if TYPE_CHECKING:

    def managed_span(
        group: MegatronSpanGroupName | DynamicSpanGroup,
        name: str,
        tracer: Tracer | None = None,
        *,
        kind: SpanKind | None = None,
        links: Sequence[Link] | None = None,
        **attributes: object,
    ) -> AbstractContextManager[Span | None]:
        """:func:`nemo.lens.managed_span`, checked against the groups of
        :class:`MegatronSpanGroup`.
        """
        ...

    def trace_fn(
        group: MegatronSpanGroupName | DynamicSpanGroup,
        name: str,
        tracer: Tracer | None = None,
    ) -> Callable[[_F], _F]:
        """:func:`nemo.lens.trace_fn`, checked against the groups of :class:`MegatronSpanGroup`."""
        ...

    def is_span_group_enabled(
        group: MegatronSpanGroupName | DynamicSpanGroup,
    ) -> bool:
        """:func:`nemo.lens.is_span_group_enabled`, checked against the groups of
        :class:`MegatronSpanGroup`.
        """
        ...
else:
    # Imported on first use, so importing this module stays free of OpenTelemetry.
    __getattr__ = primitives_getattr(__name__, globals())

# One system with the run-time registry: the class's groups and presets, registered on import.
_register_class(MegatronSpanGroup)
