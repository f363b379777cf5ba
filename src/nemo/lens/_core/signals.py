"""Flush telemetry when the process is told to stop (opt-in: ``handle_signals``).

On SIGTERM with no other handler: shut telemetry down (open spans end truncated, the queue is
exported, bounded), then die by SIGTERM as before. With an application handler: flush, then
call it. Installed from the main thread only; shutdown restores the previous handler.
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any

__all__ = ["HANDLED_SIGNALS", "install", "installed", "uninstall"]

# The logger keeps the name users configure it by (this code's module before it moved).
_logger = logging.getLogger("nemo.lens._signals")

HANDLED_SIGNALS: tuple[signal.Signals, ...] = (signal.SIGTERM,)
"""The signals nemo.lens flushes on when asked to."""

# What our handler forwards to, per signal, and what it acts on. Rebound, never
# mutated in place, so the handler reads a consistent pair without a lock.
_previous: dict[int, Any] = {}
_owner: object | None = None
_flush: Callable[[], object] | None = None
_shutdown: Callable[[], object] | None = None


def installed() -> bool:
    """Whether nemo.lens's handler is the current SIGTERM handler."""
    return signal.getsignal(signal.SIGTERM) is _on_signal


def install(owner: object, *, flush: Callable[[], object], shutdown: Callable[[], object]) -> bool:
    """Route SIGTERM through nemo.lens for *owner* (a telemetry handle).

    *flush* runs before a chained application handler, *shutdown* before the
    process dies by default. Must be called from the main thread. Returns
    whether the handler is in place.
    """
    global _owner, _flush, _shutdown, _previous
    if threading.current_thread() is not threading.main_thread():
        raise RuntimeError(
            "handle_signals=True needs setup_telemetry() to run in the main thread: Python "
            "only lets the main thread install signal handlers"
        )
    previous: dict[int, Any] = {}
    for signum in HANDLED_SIGNALS:
        current = signal.getsignal(signum)
        if current is _on_signal:
            previous[signum] = _previous.get(signum, signal.SIG_DFL)
        elif current is None:
            _logger.warning(
                "nemo.lens: %s has a handler that was not installed from Python; it cannot "
                "be chained, so nemo.lens leaves it alone and will not flush on %s",
                signum.name,
                signum.name,
            )
        elif current == signal.SIG_IGN:
            _logger.debug("nemo.lens: %s is ignored; nothing to flush on", signum.name)
        else:
            previous[signum] = current
    if not previous:
        return False
    _previous = previous
    _flush, _shutdown, _owner = flush, shutdown, owner
    for number in previous:
        if signal.getsignal(number) is not _on_signal:
            signal.signal(number, _on_signal)
    return True


def uninstall(owner: object) -> None:
    """Stop acting for *owner*; restore the previous handlers where ours is current.

    Safe from any thread: off the main thread, the handler stays installed and
    only forwards (Python would refuse to change it there).
    """
    global _owner, _flush, _shutdown
    if _owner is not owner:
        return
    _owner = _flush = _shutdown = None
    if threading.current_thread() is not threading.main_thread():
        return
    for signum, previous in list(_previous.items()):
        if signal.getsignal(signum) is _on_signal:
            signal.signal(signum, previous)


def _on_signal(signum: int, frame: FrameType | None) -> None:
    previous = _previous.get(signum, signal.SIG_DFL)
    chained = callable(previous)
    action = _flush if chained else _shutdown
    if action is not None:
        try:
            action()
        except Exception:  # never let telemetry turn a SIGTERM into a traceback
            _logger.exception("nemo.lens: flushing telemetry on signal %d failed", signum)
    if chained:
        previous(signum, frame)
        return
    if previous == signal.SIG_IGN:
        return
    # The default action: die of this signal, as if nemo.lens had not been here.
    signal.signal(signum, signal.SIG_DFL)
    signal.raise_signal(signum)
