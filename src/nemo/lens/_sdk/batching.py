"""A batch span processor that never blocks without bound, never loses silently, and forks.

Like the SDK's ``BatchSpanProcessor`` (spans queued as they end, exported in batches by a
thread), with a policy for a full queue (``block`` for the file, bounded by progress;
``drop`` for OTLP), no lock on the span path, a drain at shutdown, every loss counted,
and a fresh queue and thread after ``fork`` (``docs/architecture.md``, the export path).
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Final, Literal

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor
from opentelemetry.sdk.trace.export import SpanExporter

from nemo.lens._core import fork as _fork
from nemo.lens._sdk.exporters.guard import SpanGuard
from nemo.lens._sdk.exporters.health import ExportHealth, describe_destination

if TYPE_CHECKING:
    from nemo.lens._sdk.recorded_span import RecordingSpan

__all__ = [
    "DEFAULT_STALL_TIMEOUT_MILLIS",
    "POLL_INTERVAL_S",
    "BatchingSpanProcessor",
    "WhenFull",
]

# The logger keeps the name users configure it by (this code's module before it moved).
_logger = logging.getLogger("nemo.lens.exporters.batch")

WhenFull = Literal["block", "drop"]
"""What a full queue does to the thread that ends a span: wait for room, or drop the span."""

DEFAULT_STALL_TIMEOUT_MILLIS: Final = 5000
"""How long a blocking processor waits for an exporter that completes no batch at all."""

POLL_INTERVAL_S: Final = 0.02
"""How often the worker looks at the queue: the most a full batch waits to be noticed."""

_BLOCKED_SLEEP_S: Final = 0.001
"""How often a blocked span-ending thread looks for room."""


class BatchingSpanProcessor(SpanProcessor):
    """Queue ended spans and export them in batches from a background thread.

    Args:
        exporter: Where batches go.
        max_queue_size: Spans held at most (plus at most one per thread racing
            to append at the same instant).
        max_export_batch_size: Spans per ``export`` call; at most the queue size.
        schedule_delay_millis: Longest a span waits when the queue is not
            filling; a full batch is exported as soon as the worker sees it.
        when_full: ``"block"`` or ``"drop"`` (see the module docstring).
        stall_timeout_millis: For ``"block"``: how long without a completed
            batch before the exporter counts as stalled.
        health: Where failures and drops are reported (a private one if omitted).
        exporter_name: The name nemo.lens made *exporter* under (``None``: the
            caller's); decides its quiet loggers and what a forked child uses
            (:class:`~nemo.lens._sdk.exporters.guard.SpanGuard`).
        synchronous: Export each span from the thread that ends it, with no
            queue (see the module docstring).
        synchronous_after_fork: Do so in a child forked from this process.
        open_records: Asked at every poll which open spans the exporter should
            record (``export_open``); see :mod:`nemo.lens._sdk.open_records`.
    """

    def __init__(
        self,
        exporter: SpanExporter,
        *,
        max_queue_size: int,
        max_export_batch_size: int,
        schedule_delay_millis: float,
        when_full: WhenFull = "drop",
        stall_timeout_millis: float = DEFAULT_STALL_TIMEOUT_MILLIS,
        health: ExportHealth | None = None,
        exporter_name: str | None = None,
        synchronous: bool = False,
        synchronous_after_fork: bool = False,
        open_records: Callable[[int, float], list[ReadableSpan] | None] | None = None,
    ) -> None:
        for name, value in (
            ("max_queue_size", max_queue_size),
            ("max_export_batch_size", max_export_batch_size),
            ("schedule_delay_millis", schedule_delay_millis),
            ("stall_timeout_millis", stall_timeout_millis),
        ):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
                raise ValueError(f"{name} must be a positive number, got {value!r}")
        if max_export_batch_size > max_queue_size:
            raise ValueError(
                f"max_export_batch_size ({max_export_batch_size}) must not exceed "
                f"max_queue_size ({max_queue_size})"
            )
        if when_full not in ("block", "drop"):
            raise ValueError(f"when_full must be 'block' or 'drop', got {when_full!r}")
        self.max_queue_size = int(max_queue_size)
        self.max_export_batch_size = int(max_export_batch_size)
        self.schedule_delay_millis = schedule_delay_millis
        self.when_full: WhenFull = when_full
        self.stall_timeout_millis = stall_timeout_millis
        self.health = health if health is not None else ExportHealth()
        self._out = SpanGuard(
            exporter, self.health, name=exporter_name, in_export_thread=not synchronous
        )
        self._destination = describe_destination(exporter)
        self._synchronous = synchronous
        self._synchronous_after_fork = synchronous_after_fork
        self._open_records = open_records
        self._disabled = False
        self._shutdown = False
        self._worker_done = threading.Event()
        self._reset_runtime_state()
        # Whether queue_span may skip its checks: not synchronous, and (until set
        # false for good) not disabled, not a forked child, not sealed.
        self._plain = not synchronous
        self._start_worker()
        _fork.register(self)

    # -- state that a forked child rebuilds -----------------------------------------

    def _reset_runtime_state(self) -> None:
        self._queue: collections.deque[ReadableSpan | RecordingSpan] = collections.deque()
        self._in_flight = 0
        self._wake = threading.Event()
        self._flush_lock = threading.Lock()
        self._flush_done = threading.Condition(self._flush_lock)
        self._flush_requested = 0
        self._flush_completed = 0
        self._progress_at = time.monotonic()
        self._stalled = False
        self._forked_at_ns = 0
        # Set once shutdown's last drain has begun: a span ending after that is
        # counted as lost instead of waiting in a queue nobody exports.
        self._sealed = False
        self._worker_failed = False

    def _start_worker(self) -> None:
        self._worker_done = threading.Event()
        if self._synchronous and self._open_records is None:
            # Spans are exported by the threads that end them: no worker to wait for.
            self._worker_done.set()
            return
        self._worker = threading.Thread(
            target=self._run, name="nemo.lens span exporter", daemon=True
        )
        self._worker.start()

    def _after_fork_in_child(self) -> None:
        # Forget the parent's queue and start this process's own worker (which exporter
        # the child uses is the guard's business).
        self._reset_runtime_state()
        self._plain = False  # a forked child: every span checked
        if not self._out.usable_after_fork:
            # No thread, no export: the child leaves the parent's exporter alone.
            self._disabled = True
            return
        # A span that started before the fork is the parent's: if the child ends
        # its copy (unwinding a `with` block on the way out), exporting it would
        # duplicate a span the parent exports itself, under the same ids.
        self._forked_at_ns = time.time_ns()
        # A forked worker can be killed at any moment after its task returns
        # (multiprocessing.Pool's terminate() at the end of a with block): a
        # local exporter then writes each span before end() returns.
        self._synchronous = self._synchronous or self._synchronous_after_fork
        if not self._shutdown:
            self._start_worker()

    # -- the span path ----------------------------------------------------------------

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        """Nothing to do when a span starts."""

    def on_end(self, span: ReadableSpan) -> None:
        """Queue *span* for export (see the module docstring for a full queue).

        A span that ends while shutdown is draining the queue is still
        exported; one that ends after that is counted as lost.
        """
        context = span.context
        if context is None or not context.trace_flags.sampled:
            return
        self.queue_span(span)

    def queue_span(self, span: ReadableSpan | RecordingSpan) -> None:
        """Queue a sampled span that has ended, as :meth:`on_end` does.

        nemo.lens's recording tracer hands its spans here directly (they are
        sampled, and their context is not made just to be checked).
        """
        # Nothing unusual (see __init__) and room: the checks below would pass.
        if not (self._plain and len(self._queue) < self.max_queue_size):
            if self._disabled:
                return
            if self._forked_at_ns and (span.start_time or 0) < self._forked_at_ns:
                return
            if self._sealed:
                self._late()
                return
            if self._synchronous:
                self._export([span])
                return
            if len(self._queue) >= self.max_queue_size and not self._wait_for_room():
                self._drop()
                return
        self._queue.append(span)
        if self._sealed:
            # Shutdown's last drain began between the check above and the
            # append. It may still have taken the span; if not, it is lost.
            try:
                self._queue.remove(span)
            except ValueError:
                return  # exported after all
            self._late()

    def _late(self) -> None:
        self.health.span_ended_late(self._destination)

    def _wait_for_room(self) -> bool:
        if self.when_full == "drop" or self._stalled:
            return False
        stall_s = self.stall_timeout_millis / 1000
        waiting_since = time.monotonic()
        while len(self._queue) >= self.max_queue_size:
            if self._shutdown or self._stalled:
                return False
            now = time.monotonic()
            if now - max(waiting_since, self._progress_at) > stall_s:
                self._stalled = True
                return False
            time.sleep(_BLOCKED_SLEEP_S)
        return True

    def _drop(self) -> None:
        self.health.span_dropped(
            self._destination,
            stalled=self._stalled,
            stall_timeout_millis=self.stall_timeout_millis,
            queue_size=self.max_queue_size,
        )

    # -- the worker -------------------------------------------------------------------

    def _run(self) -> None:
        delay_s = self.schedule_delay_millis / 1000
        next_export = time.monotonic() + delay_s
        try:
            while not self._shutdown:
                try:
                    self._wake.wait(POLL_INTERVAL_S)
                    self._wake.clear()
                    if self._shutdown:
                        break
                    flush_target = self._flush_requested
                    now = time.monotonic()
                    if flush_target != self._flush_completed or now >= next_export:
                        self._export_batches(everything=True)
                        next_export = time.monotonic() + delay_s
                        self._complete_flush(flush_target)
                    elif len(self._queue) >= self.max_export_batch_size:
                        self._export_batches(everything=False)
                    if self._open_records is not None:
                        self._record_open(self._open_records)
                except BaseException:
                    # Nothing may end this thread early: the spans queued behind
                    # it would never be exported, and nobody would say so.
                    level = logging.DEBUG if self._worker_failed else logging.ERROR
                    self._worker_failed = True
                    _logger.log(
                        level, "nemo.lens: the span export thread hit an error", exc_info=True
                    )
                    time.sleep(POLL_INTERVAL_S)
            # Export what was queued when shutdown began; spans that end while
            # that runs join the queue and are exported too. Then no more: a
            # thread that keeps emitting must not keep shutdown from finishing.
            self._export_batches(everything=True, at_most=len(self._queue))
            self._plain = False
            self._sealed = True
            self._export_batches(everything=True)  # what ended before the seal
            self._complete_flush(self._flush_requested)
        finally:
            self._plain = False
            self._sealed = True
            self._worker_done.set()

    def _export_batches(self, *, everything: bool, at_most: int | None = None) -> None:
        queue = self._queue
        batch_size = self.max_export_batch_size
        budget = at_most
        while len(queue) >= (1 if everything else batch_size):
            if budget is not None:
                if budget <= 0:
                    return
                budget -= batch_size
            batch: list[ReadableSpan | RecordingSpan] = []
            try:
                for _ in range(batch_size):
                    batch.append(queue.popleft())
            except IndexError:
                pass
            self._in_flight = len(batch)
            self._export(batch)
            self._in_flight = 0
            self._progress_at = time.monotonic()
            self._stalled = False

    def _record_open(self, due: Callable[[int, float], list[ReadableSpan] | None]) -> None:
        spans = due(time.time_ns(), time.monotonic() - self._progress_at)
        if spans is not None:
            self._out.export_open(spans, time.time_ns())
            self._progress_at = time.monotonic()

    def _export(self, batch: list[ReadableSpan | RecordingSpan]) -> None:
        # A RecordingSpan reads as a finished ReadableSpan (the guard sees to its form).
        self._out.export(batch)  # type: ignore[arg-type]

    def _complete_flush(self, target: int) -> None:
        with self._flush_done:
            if target > self._flush_completed:
                self._flush_completed = target
            self._flush_done.notify_all()

    # -- flush and shutdown ---------------------------------------------------------

    @property
    def pending(self) -> int:
        """Spans queued or being exported right now."""
        return len(self._queue) + self._in_flight

    def force_flush(self, timeout_millis: float = 30000) -> bool:
        """Export everything queued so far; ``True`` if done within *timeout_millis*.

        ``True`` means the exporter was handed every span, not that it accepted
        them: failed exports are counted in :attr:`health`.
        """
        if self._shutdown or self._disabled or self._synchronous:
            return self.pending == 0
        # NaN and negative: no wait; a huge timeout is capped at a century.
        wait_ms = timeout_millis if timeout_millis > 0 else 0
        deadline = time.monotonic() + min(wait_ms / 1000, threading.TIMEOUT_MAX / 2)
        with self._flush_done:
            self._flush_requested += 1
            target = self._flush_requested
        self._wake.set()
        with self._flush_done:
            while self._flush_completed < target:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not self._worker.is_alive():
                    return False
                self._flush_done.wait(min(remaining, 0.1))
        return True

    def shutdown(self, timeout_millis: float | None = None) -> None:
        """Stop accepting spans, export the queue, then shut the exporter down.

        See :meth:`close`, which also says whether the queue was drained.
        """
        self.close(timeout_millis)

    def close(self, timeout_millis: float | None = None) -> bool:
        """Stop accepting spans, export the queue, then shut the exporter down.

        Waits at most *timeout_millis* for the queue to drain (``None``: as long
        as it takes) before shutting the exporter down anyway; an exporter that
        is still retrying gives up then. Returns whether everything queued was
        handed to the exporter in time. Later calls only report that.
        """
        if self._disabled:
            return True
        if self._shutdown:
            return self._worker_done.is_set()
        self._shutdown = True
        if self._synchronous:
            self._plain = False
            self._sealed = True
        self._wake.set()
        wait_s = None
        if timeout_millis is not None:
            # NaN and negative waits are no wait; infinity, as long as it takes.
            wait_s = timeout_millis / 1000 if timeout_millis > 0 else 0.0
            if wait_s >= threading.TIMEOUT_MAX / 2:
                wait_s = None
        self._worker_done.wait(wait_s)
        drained = self._worker_done.is_set()
        # (A forked child's copy of the parent's exporter is left alone by the wrapper.)
        try:
            self._out.shutdown()
        except Exception:
            _logger.debug("nemo.lens: shutting the span exporter down failed", exc_info=True)
        return drained

    @property
    def exporter(self) -> SpanExporter:
        """The exporter spans go to (a forked child's own, once it made one)."""
        return self._out.inner
