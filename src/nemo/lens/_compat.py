"""Shims for what nemo-lens 0.1.0 and upstream v0.2.0 users touch beyond the public API.

Each keeps an old way of reaching into nemo.lens working; the modules it concerns apply it.
"""

from __future__ import annotations

import sys
import types
from typing import Any, Final

from nemo.lens._core import state as _state

__all__ = [
    "FIXTURE_SHUTDOWN_TIMEOUT_MS",
    "HandleModule",
    "apply_handle_module",
    "claim_setup",
    "initialised",
    "old_name",
    "set_initialised",
]

FIXTURE_SHUTDOWN_TIMEOUT_MS: Final = 1000
"""How long a shutdown made for a test may take (``_INITIALIZED = False``, a test reset)."""


# Set by assigning nemo.lens.handle._INITIALIZED = True with no set-up active: the next
# enabled set-up is then refused, as if one had run. Set-up and shutdown clear it.
_claimed = False


def claim_setup(claimed: bool) -> None:
    """Say whether the process counts as set up without a current handle (see above)."""
    global _claimed
    _claimed = claimed


def initialised() -> bool:
    """v0.2.0's ``nemo.lens.handle._INITIALIZED``: whether an enabled set-up is active."""
    return _state.current_handle() is not None or _claimed


def set_initialised(value: bool) -> None:
    """Assign v0.2.0's ``nemo.lens.handle._INITIALIZED``.

    ``False`` (what upstream's test fixtures do between tests) shuts the active set-up
    down briefly and forgets it, so the next set-up starts as in a fresh process.
    ``True`` makes the next enabled set-up refuse, as if one had run.
    """
    claim_setup(value)
    handle = _state.current_handle()
    if not value and handle is not None:
        handle.shutdown(FIXTURE_SHUTDOWN_TIMEOUT_MS)


class HandleModule(types.ModuleType):
    """``nemo.lens.handle`` with v0.2.0's ``_INITIALIZED`` flag (see :func:`initialised`)."""

    @property
    def _INITIALIZED(self) -> bool:
        return initialised()

    @_INITIALIZED.setter
    def _INITIALIZED(self, value: object) -> None:
        set_initialised(bool(value))


def apply_handle_module(name: str) -> None:
    """Give module *name* (``nemo.lens.handle``) the ``_INITIALIZED`` property."""
    sys.modules[name].__class__ = HandleModule


def old_name(field: str) -> property:
    """A property that reads and assigns *field* under its v0.2.0 name (``NemoLensConfig``'s
    ``_span_group_cls``, whose keyword the dataclass takes as an ``InitVar``)."""

    def read(owner: Any) -> Any:
        return getattr(owner, field)

    def assign(owner: Any, value: Any) -> None:
        setattr(owner, field, value)

    return property(read, assign, doc=f"v0.2.0's name of ``{field}``.")
