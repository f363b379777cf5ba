"""Shims for what nemo-lens 0.1.0 and upstream v0.2.0 users touch beyond the public API.

Each shim is here, named for the old behaviour it keeps: the public modules only apply them.
"""

from __future__ import annotations

import sys
import types

from nemo.lens._core import handle as _handle
from nemo.lens._core import state as _state

__all__ = ["HandleModule", "apply_handle_module", "initialised", "set_initialised"]


def initialised() -> bool:
    """v0.2.0's ``nemo.lens.handle._INITIALIZED``: whether an enabled set-up is active."""
    return _state.current_handle() is not None or _state.setup_claimed()


def set_initialised(value: bool) -> None:
    """Assign v0.2.0's ``nemo.lens.handle._INITIALIZED``.

    ``False`` (what upstream's test fixtures do between tests) shuts the active set-up
    down briefly and forgets it, so the next set-up starts as in a fresh process.
    ``True`` makes the next enabled set-up refuse, as if one had run.
    """
    _state.claim_setup(value)
    if value:
        return
    with _handle.LOCK:
        handle = _state.current_handle()
    if handle is not None:
        handle.shutdown(_handle.TESTING_SHUTDOWN_TIMEOUT_MS)


class HandleModule(types.ModuleType):
    """``nemo.lens.handle`` with v0.2.0's ``_INITIALIZED`` flag read from and written to
    set-up's state (see :func:`initialised`)."""

    @property
    def _INITIALIZED(self) -> bool:
        return initialised()

    @_INITIALIZED.setter
    def _INITIALIZED(self, value: object) -> None:
        set_initialised(bool(value))


def apply_handle_module(name: str) -> None:
    """Give module *name* (``nemo.lens.handle``) the ``_INITIALIZED`` property."""
    sys.modules[name].__class__ = HandleModule
