"""Set-up and shutdown: :func:`setup_telemetry` and :class:`TelemetryHandle`.

Set-up runs in three phases so that a mistake never leaves a process half
configured: it validates everything first, then builds the SDK pipeline without
touching global state, then publishes it in one step (see
:mod:`nemo.lens._setup`). A disabled config builds nothing: the handle's
tracer and meter are no-ops and OpenTelemetry's globals stay untouched. The SDK
is imported only when set-up enables telemetry.

``_INITIALIZED`` is nemo-lens v0.2.0's flag, which its users' test fixtures read (has
set-up run?) and reset (``nemo.lens.handle._INITIALIZED = False`` between tests, so that
the next test may set up again): reading it says whether an enabled set-up is active;
assigning ``False`` shuts that set-up down and forgets it.
"""

from __future__ import annotations

import sys
import types
from typing import TYPE_CHECKING

from nemo.lens._core import lifecycle as _lifecycle
from nemo.lens._core.handle import DEFAULT_SHUTDOWN_TIMEOUT_MS, TelemetryHandle
from nemo.lens._core.lifecycle import get_meter, get_tracer
from nemo.lens._names import rehome
from nemo.lens._setup import StrategyArgument, setup_telemetry

__all__ = [
    "DEFAULT_SHUTDOWN_TIMEOUT_MS",
    "StrategyArgument",
    "TelemetryHandle",
    "get_meter",
    "get_tracer",
    "setup_telemetry",
]

if TYPE_CHECKING:
    _INITIALIZED: bool


class _HandleModule(types.ModuleType):
    """This module, with v0.2.0's ``_INITIALIZED`` flag read from and written to set-up's state."""

    @property
    def _INITIALIZED(self) -> bool:
        return _lifecycle.initialised()

    @_INITIALIZED.setter
    def _INITIALIZED(self, value: object) -> None:
        _lifecycle.set_initialised(bool(value))


sys.modules[__name__].__class__ = _HandleModule
rehome(globals(), __all__)
