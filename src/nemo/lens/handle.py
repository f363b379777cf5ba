"""Set-up and shutdown: :func:`setup_telemetry` and :class:`TelemetryHandle`.

Also v0.2.0's ``_INITIALIZED`` flag (see :mod:`nemo.lens._compat`), which
:func:`is_telemetry_initialized` reads under a public name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nemo.lens._compat import apply_handle_module
from nemo.lens._core.handle import (
    DEFAULT_SHUTDOWN_TIMEOUT_MS,
    TelemetryHandle,
    get_meter,
    get_tracer,
    is_telemetry_initialized,
)
from nemo.lens._core.setup_checks import resolve_strategy
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

from nemo.lens.config import NemoLensConfig
from nemo.lens.strategies import export_decision


def _should_export(
    config: NemoLensConfig,
    rank: int,
    world_size: int,
    override: StrategyArgument | None = None,
) -> bool:
    """Upstream-internal (its tests import it): whether *rank* of *world_size* exports,
    asked of *override* or else ``config.export_strategy``, as set-up asks."""
    return export_decision(resolve_strategy(config, override), config, rank, world_size)


apply_handle_module(__name__)
rehome(globals(), __all__)
