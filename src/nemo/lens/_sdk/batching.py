"""A batch span processor that never blocks without bound, never loses silently, and forks:
the SDK's ``BatchSpanProcessor`` with a policy for a full queue, no lock on the span path,
a drain at shutdown, every loss counted, a fresh queue and thread after ``fork``.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import math
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Final, Literal

from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor
from opentelemetry.sdk.trace.export import SpanExporter

from nemo.lens._core import fork as _fork
from nemo.lens._sdk.exporters.guard import SpanGuard
from nemo.lens._sdk.exporters.health import ExportHealth, describe_destination

if TYPE_CHECKING:
    from nemo.lens._sdk.recording import RecordingSpan

__all__ = [
    "DEFAULT_STALL_TIMEOUT_MILLIS",
    "POLL_INTERVAL_S",
    "BatchingSpanProcessor",
    "WhenFull",
    "bounded_timeout_ms",
]

# The logger keeps the name users configure it by (this code's module before it moved).
_logger = logging.getLogger("nemo.lens.exporters.batch")

WhenFull = Literal["block", "drop"]
"""What a full queue does to the thread that ends a span: wait for room, or drop the span."""

DEFAULT_STALL_TIMEOUT_MILLIS: Final = 5000
"""How long a blocking processor waits for an exporter that completes no batch at all."""
POLL_INTERVAL_S: Final = 0.02
"""How often the worker looks at the queue: the most a full batch waits to be noticed."""


def bounded_timeout_ms(timeout_ms: float) -> float:
    """*timeout_ms* as a wait the ``threading`` module accepts: at least 0, at most half of
    ``threading.TIMEOUT_MAX`` (over a century: what infinity means), NaN as 0."""
    if math.isnan(timeout_ms) or timeout_ms <= 0:
        return 0.0
    return float(min(timeout_ms, threading.TIMEOUT_MAX * 500))


class BatchingSpanProcessor(SpanProcessor):
    """Queue ended spans and export them in batches from a background thread.

    Args:
        max_queue_size: Spans held at most (plus one per thread racing to append).
        max_export_batch_size: Spans per ``export`` call; at most the queue size.
        schedule_delay_millis: Longest a span waits when the queue is not filling.
        when_full: ``"block"`` (wait for room, until the exporter completes no batch for
            *stall_timeout_millis*) or ``"drop"``.
        health: Where failures and drops are counted (a private one if omitted).
        exporter_name: The name nemo.lens made *exporter* under (``None``: the caller's).
        synchronous: Export each span from the thread that ends it, with no queue.
        synchronous_after_fork: Do so in a child forked from this process.
        open_records: Asked at every poll which open spans the exporter records.
        on_poll: Called at every poll of the export thread (the goodput recorder's drain).
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
        on_poll: Callable[[], None] | None = None,
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
        self.on_poll = on_poll
        self._disabled = self._shutdown = False
        self._reset()
        # Whether queue_span may skip its checks: not synchronous, and (until set
        # false for good) not disabled, not a forked child, not sealed.
        self._plain = not synchronous
        self._start_worker()
        _fork.register(self)

    def _reset(self) -> None:
        self._queue: collections.deque[ReadableSpan | RecordingSpan] = collections.deque()
        self._in_flight = 0
        self._wake = threading.Event()
        self._flush_done = threading.Condition(threading.Lock())
        self._flush_requested = self._flush_completed = 0
        self._progress_at = time.monotonic()
        self._stalled = self._worker_failed = False
        self._forked_at_ns = 0
        # Set once shutdown's last drain has begun: a span ending after that is counted
        # as lost instead of waiting in a queue nobody exports.
        self._sealed = False

    def _start_worker(self) -> None:
        self._worker_done = threading.Event()
        if self._synchronous and self._open_records is None:
            self._worker_done.set()  # the threads that end spans export them
            return
        self._worker = threading.Thread(
            target=self._run, name="nemo.lens span exporter", daemon=True
        )
        self._worker.start()

    def _after_fork_in_child(self) -> None:
        # The parent's queue is the parent's to export; which exporter the child uses is
        # the guard's business.
        self._reset()
        self._plain = False
        if not self._out.usable_after_fork:
            self._disabled = True  # no thread, no export
            return
        # A span started before the fork is the parent's: the child's copy, ended as it
        # unwinds a `with` block, would duplicate it under the same ids.
        self._forked_at_ns = time.time_ns()
        self._synchronous = self._synchronous or self._synchronous_after_fork
        if not self._shutdown:
            self._start_worker()

    def on_end(self, span: ReadableSpan) -> None:
        """Queue *span* if it is sampled."""
        context = span.context
        if context is not None and context.trace_flags.sampled:
            self.queue_span(span)

    def queue_span(self, span: ReadableSpan | RecordingSpan) -> None:
        """Queue a sampled span that has ended (the recording tracer hands its spans here).
        One that ends after shutdown's last drain began is counted as lost."""
        if not (self._plain and len(self._queue) < self.max_queue_size):
            if self._disabled or (
                self._forked_at_ns and (span.start_time or 0) < self._forked_at_ns
            ):
                return
            if self._sealed:
                self.health.span_ended_late(self._destination)
                return
            if self._synchronous:
                self._out.export([span])  # type: ignore[list-item]
                return
            if len(self._queue) >= self.max_queue_size and not self._wait_for_room():
                self.health.span_dropped(
                    self._destination,
                    stalled=self._stalled,
                    stall_timeout_millis=self.stall_timeout_millis,
                    queue_size=self.max_queue_size,
                )
                return
        self._queue.append(span)
        if self._sealed:
            # Shutdown's last drain began between the check and the append: it may
            # still have taken the span; if not, it is lost.
            try:
                self._queue.remove(span)
            except ValueError:
                return
            self.health.span_ended_late(self._destination)

    def _wait_for_room(self) -> bool:
        if self.when_full == "drop" or self._stalled:
            return False
        since = time.monotonic()
        while len(self._queue) >= self.max_queue_size:
            if self._shutdown or self._stalled:
                return False
            if time.monotonic() - max(since, self._progress_at) > self.stall_timeout_millis / 1e3:
                self._stalled = True
                return False
            time.sleep(0.001)
        return True

    def _run(self) -> None:
        delay_s = self.schedule_delay_millis / 1000
        next_export = time.monotonic() + delay_s
        try:
            while not self._shutdown:
                try:
                    # Each drain takes at most what is queued as it begins, so that threads
                    # emitting faster than the exporter cannot keep the worker from looking
                    # at shutdown; a queue still full is drained again without waiting.
                    if len(self._queue) < self.max_export_batch_size:
                        self._wake.wait(POLL_INTERVAL_S)
                        self._wake.clear()
                        if self._shutdown:
                            break
                    target, size = self._flush_requested, self.max_export_batch_size
                    # Full batches while there are (a write each: fewer hand-overs of the
                    # interpreter lock), the rest when its time comes or a flush asks.
                    if target != self._flush_completed or (
                        time.monotonic() >= next_export and len(self._queue) < size
                    ):
                        self._export_batches(everything=True, at_most=len(self._queue))
                        next_export = time.monotonic() + delay_s
                        self._complete_flush(target)
                    elif len(self._queue) >= size:
                        self._export_batches(everything=False, at_most=len(self._queue))
                    if self._open_records is not None:
                        spans = self._open_records(
                            time.time_ns(), time.monotonic() - self._progress_at
                        )
                        if spans is not None:
                            self._out.export_open(spans, time.time_ns())
                            self._progress_at = time.monotonic()
                    if self.on_poll is not None:
                        self.on_poll()
                except BaseException:
                    # Nothing may end this thread: the spans behind it would never be
                    # exported, and nobody would say so.
                    level = logging.DEBUG if self._worker_failed else logging.ERROR
                    self._worker_failed = True
                    _logger.log(
                        level, "nemo.lens: the span export thread hit an error", exc_info=True
                    )
                    time.sleep(POLL_INTERVAL_S)
            # What was queued when shutdown began, and what ends while that is exported;
            # then no more: a thread that keeps emitting must not keep shutdown going.
            self._export_batches(everything=True, at_most=len(self._queue))
            self._plain, self._sealed = False, True
            self._export_batches(everything=True)  # what ended before the seal
            self._complete_flush(self._flush_requested)
        finally:
            self._plain, self._sealed = False, True
            self._worker_done.set()

    def _export_batches(self, *, everything: bool, at_most: int | None = None) -> None:
        queue, size = self._queue, self.max_export_batch_size
        while len(queue) >= (1 if everything else size):
            if at_most is not None:
                if at_most <= 0:
                    return
                at_most -= size
            batch: list[ReadableSpan | RecordingSpan] = []
            with contextlib.suppress(IndexError):  # a span taken back at the seal
                for _ in range(size):
                    batch.append(queue.popleft())
            self._in_flight = len(batch)
            self._out.export(batch)  # type: ignore[arg-type]
            self._in_flight = 0
            self._progress_at = time.monotonic()
            self._stalled = False

    def _complete_flush(self, target: int) -> None:
        with self._flush_done:
            self._flush_completed = max(self._flush_completed, target)
            self._flush_done.notify_all()

    @property
    def pending(self) -> int:
        """Spans queued or being exported."""
        return len(self._queue) + self._in_flight

    def force_flush(self, timeout_millis: float = 30000) -> bool:
        """Hand everything queued so far to the exporter; ``True`` if done within
        *timeout_millis* (failed exports are counted in :attr:`health`)."""
        if self._shutdown or self._disabled or self._synchronous:
            return self.pending == 0
        deadline = time.monotonic() + bounded_timeout_ms(timeout_millis) / 1000
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
        """:meth:`close`."""
        self.close(timeout_millis)

    def close(self, timeout_millis: float | None = None) -> bool:
        """Stop accepting spans, export the queue (waiting at most *timeout_millis*;
        ``None``: as long as it takes), then shut the exporter down, which stops one that
        is still retrying. Returns whether everything queued was handed over in time."""
        if self._disabled:
            return True
        if self._shutdown:
            return self._worker_done.is_set()
        self._shutdown = True
        if self._synchronous:
            self._plain, self._sealed = False, True
        self._wake.set()
        self._worker_done.wait(
            None if timeout_millis is None else bounded_timeout_ms(timeout_millis) / 1000
        )
        drained = self._worker_done.is_set()
        try:
            self._out.shutdown()
        except Exception:
            _logger.debug("nemo.lens: shutting the span exporter down failed", exc_info=True)
        return drained

    @property
    def exporter(self) -> SpanExporter:
        """The exporter spans go to (a forked child's own, once it made one)."""
        return self._out.inner
