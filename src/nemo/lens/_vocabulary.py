"""The shipped span-group classes, by the name ``--class`` takes, the row each group is in
the commands' ``span_groups`` view, and goodput's bucket names: read by the commands and by the
live goodput recorder."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    # Imported when used: `nemo-lens generate` must run even while the generated
    # modules are stale or broken.
    from nemo.lens.groups import SpanGroup

__all__ = ["ANOMALOUS", "BASE_CLASS", "PRODUCTIVE", "RECOVERY", "RESTART", "STARTUP"]
__all__ += ["UNACCOUNTED", "WASTED", "group_rows", "span_group_classes"]

# The buckets goodput's rules make (docs/goodput.md); the schema's `bucket` values name the rest.
PRODUCTIVE: Final = "productive"
WASTED: Final = "wasted_progress"
RESTART: Final = "restart"
UNACCOUNTED: Final = "unaccounted"
STARTUP: Final = "startup"
RECOVERY: Final = "recovery"
ANOMALOUS: Final = "anomalous_steps"

BASE_CLASS: Final = "base"
"""The name ``--class`` gives the base ``SpanGroup``."""


def span_group_classes() -> dict[str, type[SpanGroup]]:
    """``{"base": SpanGroup, "megatron": MegatronSpanGroup, ...}``: the consumers found in
    :mod:`nemo.lens.consumers`, so a consumer added to the schema needs no edit here."""
    import nemo.lens.consumers as consumers
    from nemo.lens.groups import SpanGroup

    classes: dict[str, type[SpanGroup]] = {BASE_CLASS: SpanGroup}
    for module_info in sorted(pkgutil.iter_modules(consumers.__path__), key=lambda m: m.name):
        if module_info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{consumers.__name__}.{module_info.name}")
        for value in vars(module).values():
            if (
                isinstance(value, type)
                and issubclass(value, SpanGroup)
                and value.__module__ == module.__name__
            ):
                classes[module_info.name] = value
    return classes


def group_rows(classes: Sequence[type[SpanGroup]]) -> list[tuple[str, str, str, str, bool]]:
    """(span_group, category, bucket, fires, sync) of every group of *classes*."""
    from nemo.lens.spec import categories_for

    categories = categories_for(classes)
    rows: dict[str, tuple[str, str, str, str, bool]] = {}
    buckets: dict[str, str] = {}
    for span_group in classes:
        info_of: dict[str, Any] = getattr(span_group, "GROUP_INFO", {})
        for group, info in info_of.items():
            if info.bucket:
                buckets.setdefault(group, info.bucket)
            if group not in rows:
                rows[group] = (group, categories.get(group, ""), "", str(info.fires), info.sync)
    return [(g, c, buckets.get(g, ""), f, y) for g, c, _, f, y in rows.values()]
