"""The process-wide set of enabled span groups.

Set-up resolves the job owner's spec string once and stores the result here as
one ``frozenset``; every instrumentation site then asks only ``group in
<that frozenset>``. Updates rebind the module attribute to a new frozenset, which
is atomic, so readers never take a lock and never see a half-built set.

Before set-up the set is empty: every group is disabled and the instrumented code
runs with no OpenTelemetry work at all.

It also keeps what spans of a group are tagged with (``lens.group`` and
``lens.span_category``, from the configured span-group classes; see
:func:`group_tags`), built when the configuration changes rather than per span,
and the pipeline-parallel trace carrier of 0.1.0 (:func:`set_pp_trace_carrier`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from nemo.lens import _signatures
from nemo.lens._names import signature_of
from nemo.lens.semconv import SPAN_CATEGORY, SPAN_GROUP
from nemo.lens.spec import PROFILING, categories_for, new_names, with_old_names

if TYPE_CHECKING:
    from nemo.lens.groups import SpanGroup

__all__ = [
    "enabled_span_groups",
    "get_pp_trace_carrier",
    "group_tags",
    "is_span_group_enabled",
    "set_enabled_span_groups",
    "set_pp_trace_carrier",
    "set_span_group_classes",
    "span_group_classes",
]

# Read directly by nemo.lens.helpers on the hot path (one attribute load and one
# set lookup); only ever rebound, never mutated. Besides the enabled groups it
# holds the old names of renamed ones, so code still passing an old name traces
# as before at no extra cost per call.
_enabled: frozenset[str] = frozenset()

# The groups as they were set, without the old names (what enabled_span_groups reports).
_selected: frozenset[str] = frozenset()

# The span-group classes whose categories tag spans, and those categories; None until
# configured, which means the base SpanGroup (imported only when first needed).
_classes: tuple[type[SpanGroup], ...] | None = None
_categories: Mapping[str, str] | None = None

# Group name -> the attributes that tag its spans ({lens.group: ..., lens.span_category:
# ...}), built when the configuration changes for every group of the configured classes
# and every enabled name, so the enabled hot path adds one dict lookup and builds
# nothing. A plain dict for the fastest lookup, but only ever rebound, never mutated.
# A name missing here (never configured, or a race with a reconfiguration) gets its
# tags from group_tags().
_tags: dict[str, Mapping[str, str]] = {}


# Type checkers see the generated signature, which takes only the schema's group
# names (or a DynamicSpanGroup); the function itself takes any str.
@signature_of(_signatures.is_span_group_enabled)
def is_span_group_enabled(group: str) -> bool:
    """Return whether spans of ``group`` are emitted.

    ``False`` before set-up and for names that were never enabled, including names
    no span-group class defines. The old name of a renamed group is enabled with
    its new name.
    """
    return group in _enabled


def set_enabled_span_groups(groups: Iterable[str]) -> None:
    """Replace the enabled set with ``groups``.

    Accepts any iterable of group names (a resolved preset, a list, a set) and
    stores it as a ``frozenset``; later changes to the iterable have no effect.
    Names are not checked against a span-group class, so consumer groups work; to
    turn a spec string such as ``"per_step,-optimizer"`` into names, use
    ``SpanGroup.resolve`` (or the consumer subclass's) first.

    Raises:
        TypeError: ``groups`` is a ``str`` (iterating it would enable one group
            per character) or yields something that is not a ``str``. The enabled
            set is left unchanged.
    """
    global _enabled, _selected, _tags
    if isinstance(groups, str):
        raise TypeError(
            "set_enabled_span_groups() takes an iterable of group names, not a str; "
            f"use [{groups!r}] for one group or SpanGroup.resolve({groups!r}) for a spec"
        )
    new = frozenset(groups)
    for name in new:
        if not isinstance(name, str):
            raise TypeError(f"span group names must be str, got {type(name).__name__} ({name!r})")
    enabled = with_old_names(new)
    # Tags first: a reader that sees the new enabled set finds its names tagged.
    _tags = _build_tags(_configured_categories(), enabled, new)
    _selected = new
    _enabled = enabled


def enabled_span_groups() -> frozenset[str]:
    """Return the currently enabled span groups (for introspection and tests)."""
    return _selected


# --- categories and the span attributes they give -----------------------------------------


def _configured_categories() -> Mapping[str, str]:
    global _categories
    if _categories is None:
        from nemo.lens.groups import SpanGroup

        _categories = categories_for(SpanGroup)
    return _categories


def _tag(group: str, categories: Mapping[str, str]) -> Mapping[str, str]:
    return MappingProxyType({SPAN_GROUP: group, SPAN_CATEGORY: categories.get(group, PROFILING)})


def _build_tags(
    categories: Mapping[str, str], enabled: frozenset[str], selected: frozenset[str]
) -> dict[str, Mapping[str, str]]:
    tags = {group: _tag(group, categories) for group in (*categories, *selected)}
    for name in enabled - tags.keys():
        # The old name of a renamed group: its spans are tagged with the new name.
        current = sorted(new_names(name) & selected)
        tags[name] = tags[current[0]] if current else _tag(name, categories)
    return tags


def group_tags(group: str) -> Mapping[str, str]:
    """The span attributes that tag a span of *group*: ``lens.group`` and ``lens.span_category``.

    The category comes from the classes of :func:`set_span_group_classes` (set-up
    passes ``NemoLensConfig.span_group_cls``; before that, :class:`SpanGroup`);
    a name none of them knows is ``profiling``.
    """
    found = _tags.get(group)
    if found is not None:
        return found
    return _tag(group, _configured_categories())


def set_span_group_classes(classes: type[SpanGroup] | Sequence[type[SpanGroup]]) -> None:
    """Take span categories from *classes* (one span-group class or several).

    :func:`nemo.lens.setup_telemetry` calls it with ``NemoLensConfig.span_group_cls``;
    call it yourself when you enable groups with :func:`set_enabled_span_groups`
    for a consumer's classes. With several classes, the first to name a group
    decides its category.
    """
    global _classes, _categories, _tags
    chosen = (classes,) if isinstance(classes, type) else tuple(classes)
    categories = categories_for(chosen)
    _tags = _build_tags(categories, _enabled, _selected)
    _classes = chosen
    _categories = categories


def span_group_classes() -> tuple[type[SpanGroup], ...]:
    """The classes span categories come from (see :func:`set_span_group_classes`)."""
    if _classes is None:
        from nemo.lens.groups import SpanGroup

        return (SpanGroup,)
    return _classes


def _reset_span_group_classes() -> None:
    """Back to the base class's categories (tests and ``nemo.lens.testing.reset``)."""
    global _classes, _categories, _tags
    _classes = None
    _categories = None
    _tags = _build_tags(_configured_categories(), _enabled, _selected)


# --- the pipeline-parallel trace carrier (the 0.1.0 names) ----------------------------------

_pp_trace_carrier: dict[str, Any] | None = None


def set_pp_trace_carrier(carrier: dict[str, Any] | None) -> None:
    """Keep *carrier* (a W3C carrier, e.g. from ``broadcast_trace_context``) for later stages.

    The pipeline-parallel stages of a training loop read it with
    :func:`get_pp_trace_carrier` to link their spans across stages
    (``create_linked_span(name, get_pp_trace_carrier())``). ``None`` forgets it.
    """
    global _pp_trace_carrier
    _pp_trace_carrier = carrier


def get_pp_trace_carrier() -> dict[str, Any] | None:
    """The carrier last given to :func:`set_pp_trace_carrier`, or ``None``."""
    return _pp_trace_carrier
