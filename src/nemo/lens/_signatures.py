# DO NOT EDIT: generated from schema/span_groups.toml by codegen.
# Edit the schema, then run `make generate`.
# schema-sha256: e6eaf32025e98ffccb04060a8aa522d8d5026bb63bde6eca057556804f1d64b0
"""The group-checked signatures of nemo.lens's primitives, for type checkers."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, TypeAlias, TypeVar

from nemo.lens._names import DynamicSpanGroup

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from contextlib import AbstractContextManager

    from opentelemetry.trace import Link, Span, SpanKind, Tracer

    _F = TypeVar("_F", bound=Callable[..., Any])

__all__ = ["AnySpanGroupName", "SpanGroupArg"]

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
    "verify",
]
"""Every group name of every span-group class: SpanGroup, GymSpanGroup, MegatronSpanGroup,
RLSpanGroup.
"""

SpanGroupArg: TypeAlias = AnySpanGroupName | DynamicSpanGroup
"""What nemo.lens's group-taking primitives accept: any class's group, or a DynamicSpanGroup."""

# nemo.lens.helpers and nemo.lens.state give these static types to their primitives
# with nemo.lens._names.signature_of; the implementations take any str.
if TYPE_CHECKING:

    def managed_span(
        group: SpanGroupArg,
        name: str,
        tracer: Tracer | None = None,
        *,
        kind: SpanKind | None = None,
        links: Sequence[Link] | None = None,
        **attributes: object,
    ) -> AbstractContextManager[Span | None]:
        """:func:`nemo.lens.managed_span`, checked against the groups of any span-group class
        (SpanGroup, GymSpanGroup, MegatronSpanGroup, RLSpanGroup).
        """
        ...

    def trace_fn(
        group: SpanGroupArg,
        name: str,
        tracer: Tracer | None = None,
    ) -> Callable[[_F], _F]:
        """:func:`nemo.lens.trace_fn`, checked against the groups of any span-group class
        (SpanGroup, GymSpanGroup, MegatronSpanGroup, RLSpanGroup).
        """
        ...

    def is_span_group_enabled(
        group: SpanGroupArg,
    ) -> bool:
        """:func:`nemo.lens.is_span_group_enabled`, checked against the groups of any span-group
        class (SpanGroup, GymSpanGroup, MegatronSpanGroup, RLSpanGroup).
        """
        ...
else:
    # Placeholders: only the static types above are ever used.
    managed_span = trace_fn = is_span_group_enabled = None
