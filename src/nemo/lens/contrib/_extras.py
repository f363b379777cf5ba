"""Import an optional dependency, or explain which extra to install."""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["MissingExtraError", "import_extra"]


class MissingExtraError(ImportError):
    """An optional dependency of a :mod:`nemo.lens.contrib` helper is not installed.

    The message names the ``pip install`` command that brings it in.
    """


def import_extra(module: str, *, extra: str, feature: str) -> ModuleType:
    """Import *module* (when a helper runs, never at import of a contrib module), or raise
    :class:`MissingExtraError` naming ``nemo-lens[extra]``."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingExtraError(
            f"{feature} needs the Python module {module!r}, which could not be imported "
            f"({exc}); install it with: pip install 'nemo-lens[{extra}]'"
        ) from exc
