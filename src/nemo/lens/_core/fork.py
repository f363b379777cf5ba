"""The package's one ``os.register_at_fork``: what nemo.lens rebuilds in a forked child.

Objects :func:`register` (weakly) and modules :func:`on_fork` to rebuild their locks,
threads and queues in the child; :func:`fork_unsafe` keeps a fork from happening in the
middle of a call that is not fork-safe (gRPC). Standard library only.
"""

from __future__ import annotations

import logging
import os
import threading
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Final, Protocol

__all__ = ["FORK_WAIT_S", "ForkAware", "fork_unsafe", "on_fork", "register"]

FORK_WAIT_S: Final = 1.0
"""Longest a fork waits for a fork-unsafe call (an export over gRPC) to finish."""

# The logger keeps the name users configure it by (this code's module before it moved).
_logger = logging.getLogger("nemo.lens._fork")


class ForkAware(Protocol):
    """An object with ``_after_fork_in_child()`` (called in the child, in the thread that
    forked) and maybe ``_before_fork_in_parent()`` (in the parent, before each fork)."""

    def _after_fork_in_child(self) -> None: ...


_objects: weakref.WeakSet[ForkAware] = weakref.WeakSet()
_before: list[Callable[[], None]] = []
_in_child: list[Callable[[], None]] = []


def register(obj: ForkAware) -> None:
    """Call *obj*'s fork hooks at every fork from now on, while *obj* lives."""
    _objects.add(obj)


def on_fork(
    *,
    before: Callable[[], None] | None = None,
    after_in_child: Callable[[], None] | None = None,
) -> None:
    """Call *before* in the parent before every fork, *after_in_child* in every child
    (for module-level state; objects use :func:`register`)."""
    if before is not None:
        _before.append(before)
    if after_in_child is not None:
        _in_child.append(after_in_child)


def _run(hooks: list[Callable[[], None]], what: str) -> None:
    for hook in hooks:
        try:
            hook()
        except Exception:  # telemetry must never make fork() fail, nor kill the child
            _logger.exception("nemo.lens: %s (%r) failed", what, hook)


class _Gate:
    """Counts fork-unsafe calls in progress and holds new ones back during a fork."""

    def __init__(self) -> None:
        self.condition = threading.Condition(threading.Lock())
        self.active = 0
        self.forking = False


_gate = _Gate()


@contextmanager
def fork_unsafe() -> Iterator[None]:
    """Run the block while no fork is in progress, and keep forks waiting for it
    (at most :data:`FORK_WAIT_S`)."""
    gate = _gate
    with gate.condition:
        gate.condition.wait_for(lambda: not gate.forking)
        gate.active += 1
    try:
        yield
    finally:
        with gate.condition:
            gate.active -= 1
            gate.condition.notify_all()


def _before_fork_in_parent() -> None:
    hooks = [getattr(obj, "_before_fork_in_parent", None) for obj in list(_objects)]
    _run([*_before, *(hook for hook in hooks if hook is not None)], "preparing for fork")
    with _gate.condition:
        _gate.forking = True
        if not _gate.condition.wait_for(lambda: not _gate.active, timeout=FORK_WAIT_S):
            _logger.debug("nemo.lens: forking while a fork-unsafe export is still running")


def _after_fork_in_parent() -> None:
    with _gate.condition:
        _gate.forking = False
        _gate.condition.notify_all()


def _after_fork_in_child() -> None:
    global _gate
    _gate = _Gate()  # the calls the parent's gate counted are the parent's threads'
    _run(
        [*_in_child, *(obj._after_fork_in_child for obj in list(_objects))], "resetting after fork"
    )


if hasattr(os, "register_at_fork"):  # absent on Windows, which cannot fork
    os.register_at_fork(
        before=_before_fork_in_parent,
        after_in_parent=_after_fork_in_parent,
        after_in_child=_after_fork_in_child,
    )
