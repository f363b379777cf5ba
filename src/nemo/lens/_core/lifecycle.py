"""Set-up's state over the life of the process, on the API side: fork, exit, tests.

- **Fork**: a child that ``multiprocessing`` forks leaves with ``os._exit``, skipping
  ``atexit``; its after-fork registry arms a finalizer in the child that shuts the handle
  down, so the child's spans are exported. Locks the parent's other threads held are
  replaced in the child (:func:`~nemo.lens._core.handle.renew_locks_after_fork`).
- **v0.2.0's set-up flag**, ``nemo.lens.handle._INITIALIZED``: :func:`initialised` and
  :func:`set_initialised`.
- **The tracer and meter of whatever is set up**: :func:`get_tracer`, :func:`get_meter`.
- **Tests**: :func:`reset_for_testing`.

Set-up itself, which builds the SDK side and publishes it, sits above both sides, in
:mod:`nemo.lens._setup`. Only the OpenTelemetry API is used here.
"""

from __future__ import annotations

import logging
import sys
import weakref
from typing import Final

from opentelemetry import metrics, trace

from nemo.lens import semconv, state
from nemo.lens._core import fork
from nemo.lens._core import handle as _handle
from nemo.lens._core import state as _state
from nemo.lens._core.handle import renew_locks_after_fork, shutdown_at_exit

__all__ = [
    "TESTING_SHUTDOWN_TIMEOUT_MS",
    "get_meter",
    "get_tracer",
    "initialised",
    "reset_for_testing",
    "set_initialised",
]

_logger = logging.getLogger("nemo.lens.handle")

_SCOPE_NAME: Final = semconv.SCOPE_NAME

TESTING_SHUTDOWN_TIMEOUT_MS: Final = 1000
"""How long a shutdown made for a test (a reset, ``_INITIALIZED = False``) may take."""

# -- fork ---------------------------------------------------------------------------

# Handles already registered with multiprocessing's after-fork registry.
_mp_registered: weakref.WeakSet[_state.Handle] = weakref.WeakSet()


def _before_fork() -> None:
    # multiprocessing's fork children leave with os._exit, which skips atexit.
    # Its after-fork registry (copied into the child by this very fork) lets the
    # child arm a finalizer that multiprocessing runs before that exit. Only
    # when multiprocessing is already loaded: it is the one doing the forking then.
    handle = _state.current_handle()
    util = sys.modules.get("multiprocessing.util")
    if handle is None or util is None or handle in _mp_registered:
        return
    _mp_registered.add(handle)
    util.register_after_fork(handle, _arm_multiprocessing_exit)


def _arm_multiprocessing_exit(handle: _state.Handle) -> None:
    util = sys.modules.get("multiprocessing.util")
    if util is not None and _state.current_handle() is handle:
        util.Finalize(handle, shutdown_at_exit, exitpriority=10)


# Only the forking thread exists in a child: a lock another thread held at that
# instant would stay held forever.
fork.on_fork(before=_before_fork, after_in_child=renew_locks_after_fork)


# -- nemo.lens.handle._INITIALIZED (v0.2.0's set-up flag) ----------------------------------


def initialised() -> bool:
    """What v0.2.0's ``nemo.lens.handle._INITIALIZED`` says: whether an enabled set-up is
    active (so that another one would be refused)."""
    return _state.current_handle() is not None or _state.setup_claimed()


def set_initialised(value: bool) -> None:
    """Assign v0.2.0's ``nemo.lens.handle._INITIALIZED``.

    ``False`` -- what upstream's test fixtures do between tests to allow the next set-up
    -- shuts the active set-up down (briefly: it flushes to whatever exporter it had)
    and forgets it, so the next set-up starts as in a fresh process. ``True`` makes the
    next enabled set-up refuse, as if one had run.
    """
    if value:
        _state.claim_setup(True)
        return
    _state.claim_setup(False)
    with _handle.LOCK:
        handle = _state.current_handle()
    if handle is not None:
        handle.shutdown(TESTING_SHUTDOWN_TIMEOUT_MS)


def get_tracer(name: str = _SCOPE_NAME, version: str | None = None) -> trace.Tracer:
    """Return a tracer for instrumentation scope *name*.

    While telemetry is set up, the tracer comes from nemo.lens's provider and
    keeps following it (through re-initialisation; no-op after shutdown), even
    when the application owns OpenTelemetry's global provider. Before set-up it
    comes from OpenTelemetry's global provider, as ``trace.get_tracer`` would.
    Cache the result: looking a tracer up costs microseconds.
    """
    if version is None and name == _SCOPE_NAME:
        version = _state.SCOPE_VERSION
    if _state.current_handle() is not None:
        from nemo.lens._core.hub import TRACER_HUB

        return TRACER_HUB.get_tracer(name, version)
    return trace.get_tracer(name, version)


def get_meter(name: str = _SCOPE_NAME, version: str | None = None) -> metrics.Meter:
    """Return a meter for instrumentation scope *name* (see :func:`get_tracer`).

    Instruments created from it while telemetry is set up are recreated on the
    new provider when set-up is replaced.
    """
    if version is None and name == _SCOPE_NAME:
        version = _state.SCOPE_VERSION
    if _state.current_handle() is not None:
        from nemo.lens._core.hub import METER_HUB

        return METER_HUB.get_meter(name, version)
    return metrics.get_meter(name, version or "")


def reset_for_testing() -> None:
    """Return the process to its state before any set-up (tests only).

    Shuts down the installed handle (never raising, short timeout), forgets it,
    releases OpenTelemetry's globals that nemo.lens claimed, disables every
    span group, restores the default tracer and forgets custom export
    strategies.
    """
    with _handle.LOCK:
        handle = _state.current_handle()
    if handle is not None:
        try:
            handle.shutdown(TESTING_SHUTDOWN_TIMEOUT_MS)
        except Exception:
            _logger.exception("nemo.lens: shutdown during test reset failed")
    with _handle.LOCK:
        _state.set_current_handle(None)
        _state.claim_setup(False)
    from nemo.lens._core import hub

    hub.restore_otel_globals_for_testing()
    _forget_custom_strategies()
    state.set_enabled_span_groups(())
    _state.reset_span_group_classes()
    _state.use_tracer_provider(None)


def _forget_custom_strategies() -> None:
    """Unregister every custom export strategy and restore replaced built-ins."""
    from nemo.lens import strategies

    for name, strategy in strategies.registered_strategies().items():
        builtin = strategies.BUILTIN_STRATEGIES.get(name)
        if builtin is None:
            strategies.unregister_export_strategy(name)
        elif strategy is not builtin:
            strategies.register_export_strategy(name, builtin, allow_override=True)
