"""Make nemo.lens objects usable in a child created by ``os.fork()``.

Data-loader workers are forked from a process that already set telemetry up,
often while its exporter thread is busy. The child gets a copy of every object
but only the thread that called ``fork``: a lock another thread held at that
instant stays held forever, a queue holds the parent's spans (which the parent
will export itself) and no exporter thread runs. Objects that own such state
register here and are told to rebuild it in the child, before ``fork`` returns
there.

This module holds the package's one process-wide fork hook: objects register
with :func:`register` (held weakly, so registering does not keep a discarded
pipeline alive) and modules register functions with :func:`on_fork`.

Some calls must not be under way at the instant of a fork at all: gRPC is not
fork-safe while another thread is inside it, and children forked then were seen
to die of SIGSEGV -- data-loader workers, killed by the telemetry of their
parent. Code making such a call wraps it in :func:`fork_unsafe`; a fork waits
(at most :data:`FORK_WAIT_S`) until no such call is running, and none starts
until the fork is done. Standard library only.
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
"""Longest a fork waits for a fork-unsafe call (an export over gRPC) to finish.

A healthy export takes milliseconds. One that is stuck retrying against a dead
collector can take 10 s; the fork then goes ahead rather than stall the job.
"""

# The logger keeps the name users configure it by (this code's module before it moved).
_logger = logging.getLogger("nemo.lens._fork")


class ForkAware(Protocol):
    """An object that can rebuild its threads and locks in a forked child.

    It may also define ``_before_fork_in_parent()``, called in the parent just
    before each fork.
    """

    def _after_fork_in_child(self) -> None:
        """Called in the child, in the thread that forked, before ``fork`` returns."""
        ...


_objects: weakref.WeakSet[ForkAware] = weakref.WeakSet()


def register(obj: ForkAware) -> None:
    """Call ``obj._after_fork_in_child()`` in every child forked from now on
    (and ``obj._before_fork_in_parent()``, if it has one, before each fork)."""
    _objects.add(obj)


_before: list[Callable[[], None]] = []
_in_child: list[Callable[[], None]] = []


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
    for hook in list(hooks):
        try:
            hook()
        except Exception:  # telemetry must never make fork() fail, nor kill the child
            _logger.exception("nemo.lens: %s (%r) failed", what, hook)


class _Gate:
    """Counts fork-unsafe calls in progress and holds new ones back during a fork."""

    def __init__(self) -> None:
        self._condition = threading.Condition(threading.Lock())
        self._active = 0
        self._forking = False

    def enter(self) -> None:
        with self._condition:
            while self._forking:
                self._condition.wait()
            self._active += 1

    def leave(self) -> None:
        with self._condition:
            self._active -= 1
            if not self._active:
                self._condition.notify_all()

    def close_for_fork(self) -> None:
        with self._condition:
            self._forking = True
            if not self._condition.wait_for(lambda: not self._active, timeout=FORK_WAIT_S):
                _logger.debug("nemo.lens: forking while a fork-unsafe export is still running")

    def reopen(self) -> None:
        with self._condition:
            self._forking = False
            self._condition.notify_all()


_gate = _Gate()


@contextmanager
def fork_unsafe() -> Iterator[None]:
    """Run the block while no fork is in progress, and keep forks waiting for it."""
    _gate.enter()
    try:
        yield
    finally:
        _gate.leave()


def _before_fork_in_parent() -> None:
    _run(_before, "preparing for fork")
    for obj in list(_objects):
        hook = getattr(obj, "_before_fork_in_parent", None)
        if hook is not None:
            try:
                hook()
            except Exception:  # telemetry must never make fork() fail
                _logger.exception("nemo.lens: preparing %r for fork failed", obj)
    _gate.close_for_fork()


def _after_fork_in_parent() -> None:
    _gate.reopen()


def _after_fork_in_child() -> None:
    global _gate
    # The calls counted by the parent's gate are the parent's threads'.
    _gate = _Gate()
    _run(_in_child, "resetting after fork")
    for obj in list(_objects):
        try:
            obj._after_fork_in_child()
        except Exception:  # a broken object must not take the child down with it
            _logger.exception("nemo.lens: resetting %r after fork failed", obj)


if hasattr(os, "register_at_fork"):  # absent on Windows, which cannot fork
    os.register_at_fork(
        before=_before_fork_in_parent,
        after_in_parent=_after_fork_in_parent,
        after_in_child=_after_fork_in_child,
    )
