"""The span-group classes the commands know (:mod:`nemo.lens._vocabulary`), the ones
``--class`` selects, and the rows of the ``span_group_presets`` view."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from nemo.lens._vocabulary import BASE_CLASS, group_rows, span_group_classes

if TYPE_CHECKING:
    # Imported when used: `nemo-lens generate` must run even while the generated
    # modules are stale or broken.
    from nemo.lens.groups import SpanGroup

__all__ = ["BASE_CLASS", "group_rows", "preset_rows", "selected_classes", "span_group_classes"]


def selected_classes(names: Sequence[str] | None) -> list[type[SpanGroup]]:
    """The classes ``--class`` named; every shipped one, the base first, if none."""
    classes = span_group_classes()
    return [classes[name] for name in names] if names else list(classes.values())


def preset_rows(classes: Sequence[type[SpanGroup]]) -> list[tuple[str, str]]:
    """(span_group, preset) for every preset of *classes* and group it holds."""
    rows: set[tuple[str, str]] = set()
    for span_group in classes:
        presets: dict[str, Any] = getattr(span_group, "PRESETS", {}) or {}
        for preset, groups in presets.items():
            rows.update((str(group), str(preset)) for group in groups)
    return sorted(rows)
