"""Set-up and shutdown: :func:`setup_telemetry` and :class:`TelemetryHandle`.

Set-up runs in three phases so that a mistake never leaves a process half
configured: it validates everything first, then builds the SDK pipeline without
touching global state, then publishes it in one step (see
:mod:`nemo.lens._core.setup`). A disabled config builds nothing: the handle's
tracer and meter are no-ops and OpenTelemetry's globals stay untouched. The SDK
is imported only when set-up enables telemetry.
"""

from __future__ import annotations

from nemo.lens._core.handle import DEFAULT_SHUTDOWN_TIMEOUT_MS, TelemetryHandle
from nemo.lens._core.setup import StrategyArgument, get_meter, get_tracer, setup_telemetry

__all__ = [
    "DEFAULT_SHUTDOWN_TIMEOUT_MS",
    "StrategyArgument",
    "TelemetryHandle",
    "get_meter",
    "get_tracer",
    "setup_telemetry",
]
