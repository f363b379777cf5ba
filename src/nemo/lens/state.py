"""The process-wide set of enabled span groups.

Set-up resolves the job owner's spec string once and stores the result here as
one ``frozenset``; every instrumentation site then asks only ``group in
<that frozenset>``. Updates rebind the module attribute to a new frozenset, which
is atomic, so readers never take a lock and never see a half-built set.

Before set-up the set is empty: every group is disabled and the instrumented code
runs with no OpenTelemetry work at all.
"""

from __future__ import annotations

from collections.abc import Iterable

from nemo.lens import _signatures
from nemo.lens._names import signature_of
from nemo.lens.spec import with_old_names

__all__ = ["enabled_span_groups", "is_span_group_enabled", "set_enabled_span_groups"]

# Read directly by nemo.lens.helpers on the hot path (one attribute load and one
# set lookup); only ever rebound, never mutated. Besides the enabled groups it
# holds the old names of renamed ones, so code still passing an old name traces
# as before at no extra cost per call.
_enabled: frozenset[str] = frozenset()

# The groups as they were set, without the old names (what enabled_span_groups reports).
_selected: frozenset[str] = frozenset()


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
    global _enabled, _selected
    if isinstance(groups, str):
        raise TypeError(
            "set_enabled_span_groups() takes an iterable of group names, not a str; "
            f"use [{groups!r}] for one group or SpanGroup.resolve({groups!r}) for a spec"
        )
    new = frozenset(groups)
    for name in new:
        if not isinstance(name, str):
            raise TypeError(f"span group names must be str, got {type(name).__name__} ({name!r})")
    _selected = new
    _enabled = with_old_names(new)


def enabled_span_groups() -> frozenset[str]:
    """Return the currently enabled span groups (for introspection and tests)."""
    return _selected
