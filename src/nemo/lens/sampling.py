"""Rank-aware sampling: one decision per rank, taken once at set-up.

With ``NemoLensConfig.sampler_enabled``, :func:`nemo.lens.setup_telemetry`
gives the tracer provider a :class:`RankAwareSampler` whose decision is the
export strategy's answer for this rank. On an exporting rank every span is
recorded and sampled, whatever the parent says (a parent from a non-exporting
rank must not silence this one); on any other rank no span is recorded, so
instrumented code pays for a non-recording span only, instead of building
spans that nothing would export. Span contexts, and so propagation, still work
on both.

This module is on the SDK side of the wall (it subclasses the SDK's
``Sampler``) and is imported only when telemetry is enabled, or by users who
build their own provider.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from opentelemetry.context import Context
from opentelemetry.sdk.trace.sampling import Decision, Sampler, SamplingResult
from opentelemetry.trace import Link, SpanKind, get_current_span
from opentelemetry.trace.span import TraceState
from opentelemetry.util.types import Attributes

if TYPE_CHECKING:
    from nemo.lens.config import NemoLensConfig
    from nemo.lens.strategies import ExportStrategy

__all__ = ["RankAwareSampler"]


class RankAwareSampler(Sampler):
    """Samples every span on this rank, or none, as decided at construction."""

    def __init__(self, sampled: bool, *, rank: int | None = None) -> None:
        self._sampled = bool(sampled)
        self._rank = rank
        self._decision = Decision.RECORD_AND_SAMPLE if self._sampled else Decision.DROP

    @classmethod
    def for_rank(
        cls,
        rank: int,
        world_size: int,
        config: NemoLensConfig,
        strategy: ExportStrategy | None = None,
    ) -> RankAwareSampler:
        """Return the sampler for *rank*: sampled exactly when *strategy* exports it.

        *strategy* defaults to the one registered under ``config.export_strategy``.
        """
        if strategy is None:
            from nemo.lens.strategies import get_export_strategy

            strategy = get_export_strategy(config.export_strategy)
        return cls(bool(strategy.should_export(rank, world_size, config)), rank=rank)

    @property
    def sampled(self) -> bool:
        """Whether this rank records and samples its spans."""
        return self._sampled

    def should_sample(
        self,
        parent_context: Context | None,
        trace_id: int,
        name: str,
        kind: SpanKind | None = None,
        attributes: Attributes = None,
        links: Sequence[Link] | None = None,
        trace_state: TraceState | None = None,
    ) -> SamplingResult:
        """Return this rank's fixed decision, keeping the parent's trace state."""
        parent_state = get_current_span(parent_context).get_span_context().trace_state
        if self._sampled:
            return SamplingResult(self._decision, attributes, parent_state)
        return SamplingResult(self._decision, None, parent_state)

    def get_description(self) -> str:
        """Describe the sampler (shown by the SDK in diagnostics)."""
        rank = "" if self._rank is None else f"rank={self._rank},"
        return f"RankAwareSampler{{{rank}sampled={self._sampled}}}"
