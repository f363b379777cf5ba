# DO NOT EDIT: generated from schema/span_groups.toml by nemo-lens generate.
# Edit the schema, then run `make generate`.
# schema-sha256: 8ad7b6264e4b1becd966e3fd4dfd24637b8c2d7d384c289e41cc7f993ed5e1b6
"""The group-checked signatures of nemo.lens's primitives, for type checkers."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from contextlib import AbstractContextManager

    from opentelemetry.trace import Link, Span, SpanKind, Tracer

    from nemo.lens.groups import SpanGroupArg

    _F = TypeVar("_F", bound=Callable[..., Any])

__all__ = ["is_span_group_enabled", "managed_span", "trace_fn"]

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
