"""The version of nemo-lens, written once (``pyproject.toml`` reads it); a module that imports
nothing, so anything needing the version imports it without the rest of the package."""

from __future__ import annotations

from typing import Final

__all__ = ["__version__"]

__version__: Final = "0.2.0"
