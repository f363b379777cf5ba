"""The span-group classes the commands know, by the name ``--class`` takes."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    # Imported when used: `nemo-lens generate` must run even while the generated
    # modules are stale or broken.
    from nemo.lens.groups import SpanGroup

__all__ = ["BASE_CLASS", "selected_classes", "span_group_classes"]

BASE_CLASS: Final = "base"
"""The name ``--class`` gives the base ``SpanGroup``."""


def span_group_classes() -> dict[str, type[SpanGroup]]:
    """Return ``{"base": SpanGroup, "megatron": MegatronSpanGroup, ...}``.

    Consumers are found by scanning :mod:`nemo.lens.consumers`, so a consumer
    added to the schema shows up in ``--class`` after ``make generate`` with no
    edit here.
    """
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


def selected_classes(names: Sequence[str] | None) -> list[type[SpanGroup]]:
    """The classes ``--class`` named; every shipped one, the base first, if none."""
    classes = span_group_classes()
    return [classes[name] for name in names] if names else list(classes.values())
