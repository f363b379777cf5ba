"""Set-up and shutdown: :func:`setup_telemetry` and :class:`TelemetryHandle`.

Also v0.2.0's ``_INITIALIZED`` flag (see :mod:`nemo.lens._compat`), which
:func:`is_telemetry_initialized` reads under a public name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nemo.lens._compat import apply_handle_module, should_export
from nemo.lens._core.handle import (
    DEFAULT_SHUTDOWN_TIMEOUT_MS,
    TelemetryHandle,
    get_meter,
    get_tracer,
    is_telemetry_initialized,
)
from nemo.lens._names import rehome
from nemo.lens._setup import StrategyArgument, setup_telemetry

__all__ = [
    "DEFAULT_SHUTDOWN_TIMEOUT_MS",
    "StrategyArgument",
    "TelemetryHandle",
    "get_meter",
    "get_tracer",
    "is_telemetry_initialized",
    "setup_telemetry",
]

if TYPE_CHECKING:
    _INITIALIZED: bool

# Upstream-internal; 0.1.0's and v0.2.0's tests import it from here.
_should_export = should_export

apply_handle_module(__name__)
rehome(globals(), __all__)
