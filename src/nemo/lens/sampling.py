"""Rank-aware sampling: one decision per rank, taken once (:class:`RankAwareSampler`).

On the SDK side of the wall (it subclasses the SDK's ``Sampler``): imported only when
telemetry is enabled, or by users who build their own provider.
"""

from __future__ import annotations

import hashlib
import inspect
import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, overload

from opentelemetry.context import Context
from opentelemetry.sdk.trace.sampling import Decision, Sampler, SamplingResult
from opentelemetry.trace import Link, SpanKind, get_current_span
from opentelemetry.trace.span import TraceState
from opentelemetry.util.types import Attributes

from nemo.lens._core.setup_checks import check_rank

if TYPE_CHECKING:
    from nemo.lens.config import NemoLensConfig
    from nemo.lens.strategies import ExportStrategy

__all__ = ["RankAwareSampler", "rank_fraction"]


def rank_fraction(rank: int) -> float:
    """The fraction in [0, 1) that 0.1.0's sampler compared with ``sample_rate`` for *rank*.

    Four decimal digits from the MD5 of the rank's decimal form, so a job moving to
    this release keeps sampling the same ranks. Not a security use of MD5.
    """
    digest = hashlib.md5(str(rank).encode(), usedforsecurity=False).hexdigest()
    return (int(digest, 16) % 10000) / 10000.0


class RankAwareSampler(Sampler):
    """Samples every span on this rank, or none, as decided at construction.

    ``RankAwareSampler(sampled, *, rank=None)`` takes the decision as given (set-up passes
    its export strategy's answer, see :meth:`for_rank`): every span recorded and sampled,
    whatever the parent says, or none recorded. ``RankAwareSampler(rank, world_size,
    sample_rate=1.0)`` (0.1.0) samples the rank when :func:`rank_fraction` of it is below
    ``sample_rate`` (always at ``1.0``, never at ``0.0``).
    """

    @overload
    def __init__(self, rank: int, world_size: int, sample_rate: float = 1.0) -> None: ...

    @overload
    def __init__(self, sampled: bool, *, rank: int | None = None) -> None: ...

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._rate: float | None = None
        self._world_size: int | None = None
        if len(args) >= 2 or "world_size" in kwargs or "sample_rate" in kwargs:
            given = _bind(_rank_form, "(rank, world_size, sample_rate=1.0)", args, kwargs)
            rank, self._world_size, rate = _check_rank_form(*given.values())
            self._rank: int | None = rank
            self._rate = rate
            sampled = rate >= 1.0 or (rate > 0.0 and rank_fraction(rank) < rate)
        else:
            given = _bind(_decision_form, "(sampled, *, rank=None)", args, kwargs)
            sampled, self._rank = given["sampled"], given["rank"]
            if self._rank is not None and (
                isinstance(self._rank, bool) or not isinstance(self._rank, int)
            ):
                raise TypeError(
                    f"RankAwareSampler(rank=...) must be an int or None, got {self._rank!r}"
                )
        self._sampled = bool(sampled)
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
        from nemo.lens.strategies import export_decision, get_export_strategy

        if strategy is None:
            strategy = get_export_strategy(config.export_strategy)
        return cls(export_decision(strategy, config, rank, world_size), rank=rank)

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
        """Describe the sampler (shown by the SDK in diagnostics).

        ``RankAwareSampler(rank=1, rate=0.25)`` for the 0.1.0 form,
        ``RankAwareSampler{rank=1,sampled=True}`` for a decision given as such.
        """
        if self._rate is not None:
            return f"RankAwareSampler(rank={self._rank}, rate={self._rate})"
        rank = "" if self._rank is None else f"rank={self._rank},"
        return f"RankAwareSampler{{{rank}sampled={self._sampled}}}"


def _rank_form(rank: Any, world_size: Any, sample_rate: Any = 1.0) -> None:
    """0.1.0's call, for its signature."""


def _decision_form(sampled: Any, *, rank: Any = None) -> None:
    """The call set-up makes, for its signature."""


def _bind(form: Callable[..., None], shown: str, args: Any, kwargs: Any) -> dict[str, Any]:
    try:
        bound = inspect.signature(form).bind(*args, **kwargs)
    except TypeError as exc:
        raise TypeError(f"RankAwareSampler{shown}: {exc}") from None
    bound.apply_defaults()
    return bound.arguments


def _check_rank_form(rank: object, world_size: object, rate: object) -> tuple[int, int, float]:
    rank, world_size = check_rank(rank, world_size, "RankAwareSampler")
    if isinstance(rate, bool) or not isinstance(rate, (int, float)):
        raise TypeError(f"RankAwareSampler(sample_rate=...) must be a number, got {rate!r}")
    if not (math.isfinite(rate) and 0.0 <= rate <= 1.0):
        raise ValueError(
            f"RankAwareSampler(sample_rate=...) must be between 0 and 1 (a fraction of ranks, "
            f"e.g. 0.25), got {rate!r}"
        )
    return rank, world_size, float(rate)
