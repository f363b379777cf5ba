"""Integrations with frameworks nemo.lens does not depend on: ``fastapi``, ``aiohttp``, ``ray``
and ``nccl``, each imported on its own. A framework is imported when a helper is called; a
missing one raises :class:`MissingExtraError` naming the ``pip install`` command."""

from __future__ import annotations

from nemo.lens.contrib._extras import MissingExtraError

__all__ = ["MissingExtraError"]
