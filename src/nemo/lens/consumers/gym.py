# DO NOT EDIT: generated from schema/span_groups.toml by codegen.
# Edit the schema, then run `make generate`.
# schema-sha256: e6eaf32025e98ffccb04060a8aa522d8d5026bb63bde6eca057556804f1d64b0
"""GymSpanGroup, the span groups of the 'gym' consumer."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar, Final, Literal, TypeAlias, TypeVar

from nemo.lens._names import primitive
from nemo.lens._spec import GroupInfo
from nemo.lens.groups import DynamicSpanGroup, SpanGroup

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from contextlib import AbstractContextManager

    from opentelemetry.trace import Link, Span, SpanKind, Tracer

    _F = TypeVar("_F", bound=Callable[..., Any])

__all__ = [
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
    "all",
]
"""Every preset name of :class:`GymSpanGroup`."""


class GymSpanGroup(SpanGroup):
    """Span groups for rollout gyms: HTTP servers, agents, model calls and sandboxes."""

    AGENT: Final = "agent"
    """Agent turns within a rollout. Fires per_request (every request); since 0.1.0."""

    HTTP_CLIENT: Final = "http_client"
    """HTTP egress: requests the gym sends. Fires per_request (every request); since 0.1.0."""

    MODEL_CALL: Final = "model_call"
    """Calls from the agent to the policy model. Fires per_request (every request); since 0.1.0."""

    ROLLOUT: Final = "rollout"
    """One rollout from reset to final verification. Fires per_request (every request); since
    0.1.0.
    """

    SANDBOX: Final = "sandbox"
    """Sandboxed tool or code execution. Fires per_request (every request); since 0.1.0."""

    SERVER: Final = "server"
    """HTTP ingress: requests the gym server handles. Fires per_request (every request); since
    0.1.0.
    """

    VERIFY: Final = "verify"
    """Verification (scoring) of a rollout's result. Fires per_request (every request); since
    0.1.0.
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

    PRESETS: ClassVar[Mapping[str, frozenset[str]]] = MappingProxyType(
        {
            "default": frozenset(
                {
                    SpanGroup.JOB,
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
            "all": ALL_GROUPS,
        }
    )
    """Preset name -> the groups it enables."""

    RENAMED: ClassVar[Mapping[str, str]] = MappingProxyType({})
    """Deprecated group name -> its new name; a spec naming the old one still works."""

    GROUP_INFO: ClassVar[Mapping[str, GroupInfo]] = MappingProxyType(
        {
            **SpanGroup.GROUP_INFO,
            AGENT: GroupInfo(
                name=AGENT,
                description="Agent turns within a rollout.",
                fires="per_request",
                since="0.1.0",
            ),
            HTTP_CLIENT: GroupInfo(
                name=HTTP_CLIENT,
                description="HTTP egress: requests the gym sends.",
                fires="per_request",
                since="0.1.0",
            ),
            MODEL_CALL: GroupInfo(
                name=MODEL_CALL,
                description="Calls from the agent to the policy model.",
                fires="per_request",
                since="0.1.0",
            ),
            ROLLOUT: GroupInfo(
                name=ROLLOUT,
                description="One rollout from reset to final verification.",
                fires="per_request",
                since="0.1.0",
            ),
            SANDBOX: GroupInfo(
                name=SANDBOX,
                description="Sandboxed tool or code execution.",
                fires="per_request",
                since="0.1.0",
            ),
            SERVER: GroupInfo(
                name=SERVER,
                description="HTTP ingress: requests the gym server handles.",
                fires="per_request",
                since="0.1.0",
            ),
            VERIFY: GroupInfo(
                name=VERIFY,
                description="Verification (scoring) of a rollout's result.",
                fires="per_request",
                since="0.1.0",
            ),
        }
    )
    """Group name -> what the schema says about it."""


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

    def __getattr__(name: str) -> object:
        # Imported on first use, so importing this module stays free of OpenTelemetry.
        value = primitive(__name__, name)
        globals()[name] = value
        return value
