"""Which goodput bucket a span's time feeds, and which iteration it executed.

A span feeds the bucket its group's schema entry names (``bucket = ...``; see
``nemo-lens groups``) only where the group's category is ``goodput``: Megatron
recategorizes ``evaluate`` as profiling, so its evaluations are no bucket of
their own. The category is the span's own ``lens.span_category`` when it
carries one (the process that emitted it knew which consumer's vocabulary it
used); a trace written before that attribute existed falls back to the
category the shipped classes give the group, the base class first. Groups
that no shipped class knows, and spans without a group, feed no bucket.

The iteration is a step span's ``iteration`` attribute (or the one
``--iteration-attribute`` names): an integer, or a string or float that holds
one. Anything else leaves the step without an iteration: its time counts as
productive, as it cannot be shown to have been executed again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from nemo.lens import semconv
from tests.cli.reference.goodput import PRODUCTIVE, GoodputSpan
from tests.cli.reference.read import Span

if TYPE_CHECKING:
    from nemo.lens.groups import SpanGroup

__all__ = ["DEFAULT_ITERATION_ATTRIBUTE", "Classifier"]

DEFAULT_ITERATION_ATTRIBUTE: Final = "iteration"
_GOODPUT: Final = "goodput"


@dataclass
class Classifier:
    """Turns :class:`Span` s into :class:`GoodputSpan` s; counts what it could not tell."""

    buckets: Mapping[str, str]
    """Group -> the bucket its schema entry names (only groups that name one)."""
    categories: Mapping[str, str]
    """Group -> its category, for spans that do not carry one."""
    iteration_attribute: str = DEFAULT_ITERATION_ATTRIBUTE
    steps: int = 0
    """Step spans (productive bucket) seen."""
    steps_without_iteration: int = 0

    @classmethod
    def from_classes(
        cls,
        classes: Sequence[type[SpanGroup]],
        iteration_attribute: str = DEFAULT_ITERATION_ATTRIBUTE,
    ) -> Classifier:
        """The buckets and categories of ``classes`` (the first to name a group decides)."""
        from nemo.lens.spec import categories_for

        buckets: dict[str, str] = {}
        for span_group in classes:
            for group, info in getattr(span_group, "GROUP_INFO", {}).items():
                if info.bucket:
                    buckets.setdefault(group, info.bucket)
        return cls(buckets, dict(categories_for(classes)), iteration_attribute)

    @classmethod
    def shipped(cls, iteration_attribute: str = DEFAULT_ITERATION_ATTRIBUTE) -> Classifier:
        """The classifier of every class nemo.lens ships, the base vocabulary first."""
        from nemo.lens.cli._classes import span_group_classes

        return cls.from_classes(list(span_group_classes().values()), iteration_attribute)

    def bucket(self, span: Span) -> str:
        """The bucket ``span``'s time feeds, or ``""``."""
        bucket = self.buckets.get(span.group)
        if bucket is None:
            return ""
        category = span.attributes.get(semconv.SPAN_CATEGORY)
        if not isinstance(category, str):
            category = self.categories.get(span.group, "")
        return bucket if category == _GOODPUT else ""

    def iteration(self, span: Span) -> int | None:
        """The iteration ``span`` executed, when its attribute holds a whole number."""
        return _whole_number(span.attributes.get(self.iteration_attribute))

    def classify(self, span: Span) -> GoodputSpan:
        """What the accounting needs of ``span``."""
        bucket = self.bucket(span)
        iteration = None
        if bucket == PRODUCTIVE:
            self.steps += 1
            iteration = self.iteration(span)
            if iteration is None:
                self.steps_without_iteration += 1
        return GoodputSpan(
            span.process.run_id,
            span.process.rank,
            span.lifetime,
            bucket,
            iteration,
            span.start_ns,
            span.end_ns,
            span.attributes.get(semconv.SPAN_TRUNCATED) is True,
        )


def _whole_number(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            return None
    return None
