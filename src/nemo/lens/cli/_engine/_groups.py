"""The rows of ``span_groups`` (each group the classes know: its category, goodput bucket and
tier; the first class to name a group decides) and ``span_group_presets``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nemo.lens.groups import SpanGroup

__all__ = ["group_rows", "preset_rows"]


def group_rows(classes: Sequence[type[SpanGroup]]) -> list[tuple[str, str, str, str]]:
    """(span_group, category, bucket, fires) of every group of *classes*."""
    from nemo.lens.spec import categories_for

    categories = categories_for(classes)
    rows: dict[str, tuple[str, str, str, str]] = {}
    buckets: dict[str, str] = {}
    for span_group in classes:
        info_of: dict[str, Any] = getattr(span_group, "GROUP_INFO", {})
        for group, info in info_of.items():
            if info.bucket:
                buckets.setdefault(group, info.bucket)
            if group not in rows:
                rows[group] = (group, categories.get(group, ""), "", str(info.fires))
    return [(g, c, buckets.get(g, ""), f) for g, c, _, f in rows.values()]


def preset_rows(classes: Sequence[type[SpanGroup]]) -> list[tuple[str, str]]:
    """(span_group, preset) for every preset of *classes* and group it holds."""
    rows: set[tuple[str, str]] = set()
    for span_group in classes:
        presets: dict[str, Any] = getattr(span_group, "PRESETS", {}) or {}
        for preset, groups in presets.items():
            rows.update((str(group), str(preset)) for group in groups)
    return sorted(rows)
