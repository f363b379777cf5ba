"""The version of nemo-lens, written once: ``pyproject.toml`` reads it, and
``nemo.lens.__version__`` and :mod:`nemo.lens.package_info` re-export it.

A module of its own, importing nothing, so that every module needing the version (the
instrumentation scope, the resource, the command line) imports it without importing
the package's other modules, and ``import nemo.lens`` stays light.
"""

from __future__ import annotations

from typing import Final

__all__ = ["__version__"]

__version__: Final = "0.2.0"
"""The version of nemo-lens."""
