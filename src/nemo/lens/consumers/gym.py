# DO NOT EDIT: generated from schema/span_groups.toml by nemo-lens generate.
# Edit the schema, then run `make generate`.
# schema-sha256: 8ad7b6264e4b1becd966e3fd4dfd24637b8c2d7d384c289e41cc7f993ed5e1b6
"""GymSpanGroup, the span groups of the 'gym' consumer."""

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
    "PER_ROLLOUT_PRESET",
    "PER_STEP_PRESET",
    "PROFILING_PRESET",
    "GymSpanGroup",
    "GymSpanGroupName",
    "GymSpanGroupPresetName",
    "is_span_group_enabled",
    "managed_span",
    "trace_fn",
]

GymSpanGroupName: TypeAlias = Literal[
    "job",
    "load_checkpoint",
    "model_init",
    "checkpoint",
    "evaluate",
    "forward_backward",
    "optimizer",
    "step",
    "agent",
    "http_client",
    "model_call",
    "rollout",
    "sandbox",
    "server",
    "verify",
]
"""Every group name of :class:`GymSpanGroup`, inherited ones included."""

GymSpanGroupPresetName: TypeAlias = Literal[
    "default",
    "per_rollout",
    "per_step",
    "goodput",
    "profiling",
    "all",
]
"""Every preset name of :class:`GymSpanGroup`."""


class GymSpanGroup(SpanGroup):
    """Span groups for rollout gyms: HTTP servers, agents, model calls and sandboxes."""

    AGENT: Final = "agent"
    """Agent turns within a rollout. Fires per_request (every request); profiling; since 0.1.0."""

    HTTP_CLIENT: Final = "http_client"
    """HTTP egress: requests the gym sends. Fires per_request (every request); profiling; since
    0.1.0.
    """

    MODEL_CALL: Final = "model_call"
    """Calls from the agent to the policy model. Fires per_request (every request); profiling;
    since 0.1.0.
    """

    ROLLOUT: Final = "rollout"
    """One rollout from reset to final verification. Fires per_request (every request); goodput;
    since 0.1.0.
    """

    SANDBOX: Final = "sandbox"
    """Sandboxed tool or code execution. Fires per_request (every request); profiling; since
    0.1.0.
    """

    SERVER: Final = "server"
    """HTTP ingress: requests the gym server handles. Fires per_request (every request);
    profiling; since 0.1.0.
    """

    VERIFY: Final = "verify"
    """Verification (scoring) of a rollout's result. Fires per_request (every request);
    profiling; since 0.1.0.
    """

    # Each class overrides these, so they are ClassVar rather than Final: mypy
    # forbids redefining a Final attribute in a subclass.
    ALL_GROUPS: ClassVar[frozenset[str]] = SpanGroup.ALL_GROUPS | frozenset(
        {
            AGENT,
            HTTP_CLIENT,
            MODEL_CALL,
            ROLLOUT,
            SANDBOX,
            SERVER,
            VERIFY,
        }
    )
    """Every group of the class: what the ``all`` preset enables."""

    GOODPUT_GROUPS: ClassVar[frozenset[str]] = frozenset(
        {
            SpanGroup.JOB,
            SpanGroup.LOAD_CHECKPOINT,
            SpanGroup.MODEL_INIT,
            SpanGroup.CHECKPOINT,
            SpanGroup.EVALUATE,
            SpanGroup.STEP,
            ROLLOUT,
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
                    SpanGroup.CHECKPOINT,
                    SpanGroup.EVALUATE,
                    HTTP_CLIENT,
                    ROLLOUT,
                    SERVER,
                }
            ),
            "per_rollout": frozenset(
                {
                    AGENT,
                    HTTP_CLIENT,
                    MODEL_CALL,
                    ROLLOUT,
                    SERVER,
                    VERIFY,
                }
            ),
            "per_step": frozenset(
                {
                    SpanGroup.JOB,
                    SpanGroup.LOAD_CHECKPOINT,
                    SpanGroup.MODEL_INIT,
                    SpanGroup.CHECKPOINT,
                    SpanGroup.EVALUATE,
                    SpanGroup.FORWARD_BACKWARD,
                    SpanGroup.OPTIMIZER,
                    SpanGroup.STEP,
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
            AGENT,
            "Agent turns within a rollout.",
            "per_request",
            "0.1.0",
        ),
        GroupInfo(
            HTTP_CLIENT,
            "HTTP egress: requests the gym sends.",
            "per_request",
            "0.1.0",
        ),
        GroupInfo(
            MODEL_CALL,
            "Calls from the agent to the policy model.",
            "per_request",
            "0.1.0",
        ),
        GroupInfo(
            ROLLOUT,
            "One rollout from reset to final verification.",
            "per_request",
            "0.1.0",
            category="goodput",
        ),
        GroupInfo(
            SANDBOX,
            "Sandboxed tool or code execution.",
            "per_request",
            "0.1.0",
        ),
        GroupInfo(
            SERVER,
            "HTTP ingress: requests the gym server handles.",
            "per_request",
            "0.1.0",
        ),
        GroupInfo(
            VERIFY,
            "Verification (scoring) of a rollout's result.",
            "per_request",
            "0.1.0",
        ),
    )
    """Group name -> what the schema says about it."""


# Each preset of the class as a typed, immutable constant: the very set PRESETS holds.
_TYPED_PRESETS: Final = cast(
    "Mapping[GymSpanGroupPresetName, frozenset[GymSpanGroupName]]",
    GymSpanGroup.PRESETS,
)

DEFAULT_PRESET: Final = _TYPED_PRESETS["default"]
"""The 'default' preset of GymSpanGroup. Production: the request and rollout boundaries a gym
operator watches.
"""

PER_ROLLOUT_PRESET: Final = _TYPED_PRESETS["per_rollout"]
"""The 'per_rollout' preset of GymSpanGroup. Everything inside a rollout: server, client,
rollout, verify, agent and model calls.
"""

PER_STEP_PRESET: Final = _TYPED_PRESETS["per_step"]
"""The 'per_step' preset of GymSpanGroup. Every iteration: start-up phases, steps,
forward/backward and optimizer.
"""

GOODPUT_PRESET: Final = _TYPED_PRESETS["goodput"]
"""The 'goodput' preset of GymSpanGroup. The goodput groups: semantic boundaries of useful or
resiliency time.
"""

PROFILING_PRESET: Final = _TYPED_PRESETS["profiling"]
"""The 'profiling' preset of GymSpanGroup. Every group: the fine-grained detail too, for
profiling.
"""

ALL_PRESET: Final = PROFILING_PRESET
"""The 'all' preset of GymSpanGroup. Every group of the class."""


# managed_span, trace_fn and is_span_group_enabled of nemo.lens, re-exported with
# the group parameter typed for this class: code that instruments with its own
# groups imports them from here. They are the very same functions at run time.
if TYPE_CHECKING:

    def managed_span(
        group: GymSpanGroupName | DynamicSpanGroup,
        name: str,
        tracer: Tracer | None = None,
        *,
        kind: SpanKind | None = None,
        links: Sequence[Link] | None = None,
        **attributes: object,
    ) -> AbstractContextManager[Span | None]:
        """:func:`nemo.lens.managed_span`, checked against the groups of :class:`GymSpanGroup`."""
        ...

    def trace_fn(
        group: GymSpanGroupName | DynamicSpanGroup,
        name: str,
        tracer: Tracer | None = None,
    ) -> Callable[[_F], _F]:
        """:func:`nemo.lens.trace_fn`, checked against the groups of :class:`GymSpanGroup`."""
        ...

    def is_span_group_enabled(
        group: GymSpanGroupName | DynamicSpanGroup,
    ) -> bool:
        """:func:`nemo.lens.is_span_group_enabled`, checked against the groups of
        :class:`GymSpanGroup`.
        """
        ...
else:
    # Imported on first use, so importing this module stays free of OpenTelemetry.
    __getattr__ = primitives_getattr(__name__, globals())

# One system with the run-time registry: the class's groups and presets, registered on import.
_register_class(GymSpanGroup)
