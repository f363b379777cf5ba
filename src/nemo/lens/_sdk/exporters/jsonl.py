"""JSON-lines exporters: the ``console`` and ``file`` exporters for every signal.

Spans are written in one of two layouts: the ``file`` exporter's line
(:class:`JsonLinesSpanExporter`, :mod:`~nemo.lens._sdk.exporters.encoding`), or the
SDK's own ``to_json`` (:class:`SdkJsonSpanExporter`, the ``console`` default;
:mod:`~nemo.lens._sdk.exporters.sdk_json`). Metrics and log records are the SDK's
``to_json`` in both.

Each exporter writes complete lines through a sink that serialises writers with
a lock, so concurrent batches from the span, metric and log pipelines (or from
several processors sharing a sink) never interleave within a line. A file
sink gathers a batch into one system call and keeps nothing buffered between
batches, so a crashed job keeps everything exported before the crash and a
forked child can share the file (see :class:`FileSink`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Final, Protocol

from opentelemetry.sdk._logs import ReadableLogRecord
from opentelemetry.sdk._logs.export import LogRecordExporter, LogRecordExportResult
from opentelemetry.sdk.metrics.export import MetricExporter, MetricExportResult, MetricsData
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from nemo.lens._core import fork as _fork
from nemo.lens._sdk.exporters.appends import Landed, identity, names_file, take_back
from nemo.lens._sdk.exporters.encoding import RESOURCE_ON_EVERY_LINE, LineLayout, encode_span
from nemo.lens._sdk.exporters.sdk_json import sdk_span_json

__all__ = [
    "WRITE_BUFFER_BYTES",
    "FileSink",
    "JsonLinesLogExporter",
    "JsonLinesMetricExporter",
    "JsonLinesSpanExporter",
    "LineSink",
    "SdkJsonSpanExporter",
    "StdoutSink",
]

# The logger keeps the name users configure it by (this code's module before it moved).
_logger = logging.getLogger("nemo.lens.exporters.jsonl")
# A file opened again is a recovery: said where the exporters' recoveries are.
_recovery_logger = logging.getLogger("nemo.lens.exporters.health")

_LINES_PER_TEXT: Final = 256
"""Span lines encoded at a time (about 200 KB): a whole batch's text (megabytes) would be
memory the allocator maps afresh for every batch, whose page faults cost more than the
encoding (about 1 us a span against 0.3 us)."""

WRITE_BUFFER_BYTES: Final = 4 << 20
"""What a file sink gathers into one ``write(2)``: a batch of 4,096 span lines of a
kilobyte. Each write hands the interpreter lock to the emitting threads, and the export
thread then waits its turn for it (5 ms: ``sys.getswitchinterval()``). With a write per
256 lines, a burst leaves the export thread behind, its queue full and the collector
traversing it. The buffer is made once and reused, so no batch maps fresh memory."""

# One lock for every StdoutSink: the span, metric and log exporters each have a
# sink, and their lines must not interleave on the shared stream.
_STDOUT_LOCK = threading.Lock()


def _reset_stdout_lock() -> None:
    # A forked child must not inherit the lock held by a parent thread mid-write.
    global _STDOUT_LOCK
    _STDOUT_LOCK = threading.Lock()


_fork.on_fork(after_in_child=_reset_stdout_lock)


class LineSink(Protocol):
    """Where JSON lines go. Implementations must be thread-safe.

    A sink may also have ``write_texts(texts)``, which writes each text of an
    iterable in order as :meth:`write` would, and may gather them; the
    exporters use it when it is there.
    """

    def write(self, text: str) -> None:
        """Write *text* (whole lines) and flush it."""
        ...

    def flush(self) -> None:
        """Flush anything buffered."""
        ...

    def close(self) -> None:
        """Flush and release the destination; later writes raise ``ValueError``."""
        ...


class StdoutSink:
    """Writes to whatever ``sys.stdout`` is at the time of each write.

    Looked up per write, not captured once, so redirection (``contextlib.redirect_stdout``,
    pytest's capture) sees the output. Closing never closes the process's stdout.
    """

    def write(self, text: str) -> None:
        """Write *text* to ``sys.stdout`` and flush."""
        with _STDOUT_LOCK:
            stream = sys.stdout
            stream.write(text)
            stream.flush()

    def write_texts(self, texts: Iterable[str]) -> None:
        """Write each text in order, flushing after each (as :meth:`write`)."""
        for text in texts:
            self.write(text)

    def flush(self) -> None:
        """Flush ``sys.stdout``."""
        with _STDOUT_LOCK:
            sys.stdout.flush()

    def close(self) -> None:
        """Flush ``sys.stdout`` (it stays open)."""
        self.flush()


class FileSink:
    """Appends to a file, creating its parent directories.

    The file is opened at construction so that a path that cannot be written
    fails set-up (in the caller's thread) rather than every later export (in the
    exporter's background thread). Append mode: a restarted rank with the same
    path adds to its earlier output instead of destroying it.

    Each :meth:`write` is one ``write(2)`` on a descriptor opened with
    ``O_APPEND``, with no buffer in between. So a forked child (a data-loader
    worker) can keep using the sink: its writes and the parent's land whole,
    one after the other, never inside each other's lines (Linux applies an
    ``O_APPEND`` write to a local file as one unit; over NFS give each process
    its own file). And a child has no copy of a half-written buffer to flush
    twice. The lock that serialises this process's writers is replaced in a
    forked child, where the thread that may have held it does not exist.

    :meth:`write_texts` gathers texts into one write of up to *buffer_bytes*
    (a buffer made on first use and kept): an export thread's batch is one
    system call (see :data:`WRITE_BUFFER_BYTES`). The buffer only lives during
    the call, so the above holds for it too.

    **A call writes all of its text or none of it**, and a file removed or
    replaced while the job runs is opened again at its path (directories
    included) before the next write: see :mod:`~nemo.lens._sdk.exporters.appends`.
    A write that fails raises (the exporter counts its spans); the next write the
    file system accepts resumes. A line that could not be cut back is ended with a
    newline first, so that it stays one broken line and never joins the next.
    """

    def __init__(
        self, path: str | os.PathLike[str], *, buffer_bytes: int = WRITE_BUFFER_BYTES
    ) -> None:
        if buffer_bytes < 1:
            raise ValueError(f"FileSink(buffer_bytes=...) must be at least 1, got {buffer_bytes}")
        self.path = os.fspath(path)
        self._lock = threading.Lock()
        self._buffer_lock = threading.Lock()
        self._buffer_bytes = buffer_bytes
        self._buffer: bytearray | None = None
        self._torn = False
        self.preamble: Callable[[], str] | None = None
        """What a file opened again at the path must begin with (the ``file`` exporter's
        headers: its lines name them); asked on each such reopening."""
        self._owes_preamble = False
        self._fd: int | None = self._open()
        _fork.register(self)

    def _open(self) -> int:
        parent = os.path.dirname(self.path)
        if parent:
            os.makedirs(parent, exist_ok=True)
        fd = os.open(
            self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o666
        )
        self._identity = identity(os.fstat(fd))
        return fd

    def _after_fork_in_child(self) -> None:
        self._lock = threading.Lock()
        self._buffer_lock = threading.Lock()

    def write(self, text: str) -> None:
        """Append *text*; raises ``ValueError`` after :meth:`close`."""
        self._write(text.encode("utf-8"), None)

    def write_texts(self, texts: Iterable[str]) -> None:
        """Append each text (whole lines) in order, gathered into as few writes as the
        buffer allows; raises ``ValueError`` after :meth:`close`.

        A text larger than the buffer is written on its own. While another thread
        gathers, the texts are written one by one instead of waiting for it.
        Either every text is written or, when a write fails, none stays (see the
        class docstring).
        """
        landed = Landed()
        if not self._buffer_lock.acquire(blocking=False):
            for text in texts:
                self._write(text.encode("utf-8"), landed)
            return
        try:
            buffer = self._buffer
            if buffer is None:
                buffer = self._buffer = bytearray(self._buffer_bytes)
            with memoryview(buffer) as view:
                used = 0
                for text in texts:
                    data = text.encode("utf-8")
                    end = used + len(data)
                    if end > len(buffer):
                        if used:
                            self._write(view[:used], landed)
                        used, end = 0, len(data)
                        if end > len(buffer):
                            self._write(data, landed)
                            continue
                    view[used:end] = data
                    used = end
                if used:
                    self._write(view[:used], landed)
        finally:
            self._buffer_lock.release()

    def _write(self, data: bytes | memoryview, call: Landed | None) -> None:
        # One piece of a call's text; *call* remembers where the call's earlier pieces
        # went, so that a failure takes them back too.
        with self._lock:
            fd = self._current_fd()
            if self._torn:
                os.write(fd, b"\n")  # end the broken line first (see the class docstring)
                self._torn = False
            if self._owes_preamble:
                preamble = self.preamble() if self.preamble is not None else ""
                data = preamble.encode("utf-8") + bytes(data)  # rare: once per new file
            left = memoryview(data)
            done = 0
            try:
                while left:
                    # A regular file takes the whole write unless the disk is full or
                    # a signal interrupts it; then finish the rest, or fail trying.
                    written = os.write(fd, left)
                    done += written
                    left = left[written:]
            except OSError:
                self._torn = not take_back(fd, done, call)
                raise
            self._owes_preamble = False
            if call is not None:
                call.add(fd, done)

    def _current_fd(self) -> int:
        # The descriptor to write to: reopened when the path no longer names the file.
        fd = self._fd
        if fd is None:
            raise ValueError(f"{self.path} is closed")
        if names_file(self.path, self._identity) is not False:
            return fd  # the same file, or it cannot be told (keep on writing there)
        fresh = self._open()  # raises when it cannot: this write fails, the next retries
        self._fd, self._torn, self._owes_preamble = fresh, False, True
        with contextlib.suppress(OSError):
            os.close(fd)
        _recovery_logger.info(
            "nemo.lens: %s was removed or replaced while the job ran; writing to a new file "
            "at that path",
            self.path,
        )
        return fresh

    def flush(self) -> None:
        """Nothing is buffered: every write goes straight to the file."""

    def close(self) -> None:
        """Close the file; idempotent."""
        with self._lock:
            if self._fd is not None:
                fd, self._fd = self._fd, None
                os.close(fd)


class _SinkWriter:
    """What the three exporters share: a sink, writes that fail once shut down, and a
    failure logged here (the SDK would only log it too) and reported as ``False``."""

    def __init__(self, sink: LineSink) -> None:
        self.sink = sink
        self._shut_down = False

    def _attempt(self, write: Callable[[], None], failure: str, *args: object) -> bool:
        """Run *write*; ``False`` after shutdown or when it raises."""
        if self._shut_down:
            return False
        try:
            write()
        except Exception:  # say which exporter failed
            _logger.exception("nemo.lens: " + failure, *args)
            return False
        return True

    def _close(self) -> None:
        self._shut_down = True
        self.sink.close()


class _BatchSinkWriter(_SinkWriter):
    """The span and log exporters' flush and shutdown (their interfaces agree on both)."""

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Flush the sink."""
        self.sink.flush()
        return True

    def shutdown(self) -> None:
        """Flush and close the sink; later exports fail."""
        self._close()


class JsonLinesSpanExporter(_BatchSinkWriter, SpanExporter):
    """Writes each span as one JSON object per line (see
    :mod:`~nemo.lens._sdk.exporters.encoding`), its resource on every line: the
    console's ``lens`` layout. The ``file`` exporter is a subclass with a layout of
    its own (:mod:`~nemo.lens._sdk.exporters.trace_file`)."""

    line_layout: LineLayout = RESOURCE_ON_EVERY_LINE
    """How each line ends (the redacting wrapper encodes recorded spans with it too)."""

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        """Write one line per span."""
        layout = self.line_layout
        return self.export_lines([encode_span(span, layout) for span in spans])

    def export_lines(self, lines: Sequence[str]) -> SpanExportResult:
        """Write *lines*, spans already encoded (each without its newline), a few hundred a write.

        nemo.lens's redacting wrapper encodes as it cleans
        (:class:`~nemo.lens._sdk.exporters.redacting.RedactingSpanExporter`).
        """
        if self._attempt(
            lambda: self._write_lines(lines), "writing %d span(s) as JSON lines failed", len(lines)
        ):
            return SpanExportResult.SUCCESS
        return SpanExportResult.FAILURE

    def _write_lines(self, lines: Sequence[str]) -> None:
        texts = _texts(lines)
        write_texts: Callable[[Iterable[str]], None] | None = getattr(
            self.sink, "write_texts", None
        )
        if write_texts is not None:
            write_texts(texts)
        else:  # a sink of the application's own, with write alone
            for text in texts:
                self.sink.write(text)


class SdkJsonSpanExporter(_BatchSinkWriter, SpanExporter):
    """Writes each span as the SDK's ``ReadableSpan.to_json(indent=None)``, one per line
    (see :mod:`~nemo.lens._sdk.exporters.sdk_json`): the ``console`` exporter's default.

    It has no ``export_lines``: nemo.lens's redacting wrapper hands it the SDK's
    spans, a recorded span as the ``ReadableSpan`` it stands for.
    """

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        """Write one line per span."""
        if self._attempt(
            lambda: self.sink.write("".join(sdk_span_json(span) + "\n" for span in spans)),
            "writing %d span(s) as JSON lines failed",
            len(spans),
        ):
            return SpanExportResult.SUCCESS
        return SpanExportResult.FAILURE


def _texts(lines: Sequence[str]) -> Iterator[str]:
    # The lines, with their newlines, _LINES_PER_TEXT at a time.
    for first in range(0, len(lines), _LINES_PER_TEXT):
        chunk = list(lines[first : first + _LINES_PER_TEXT])
        chunk.append("")  # the last line's newline, without copying the text again
        yield "\n".join(chunk)


class JsonLinesMetricExporter(_SinkWriter, MetricExporter):
    """Writes each metrics export as one JSON object per line."""

    def __init__(self, sink: LineSink) -> None:
        MetricExporter.__init__(self)
        _SinkWriter.__init__(self, sink)

    def export(
        self, metrics_data: MetricsData, timeout_millis: float = 10_000, **kwargs: Any
    ) -> MetricExportResult:
        """Write one line for this collection."""
        if self._attempt(
            lambda: self.sink.write(metrics_data.to_json(indent=None) + "\n"),
            "writing metrics as JSON lines failed",
        ):
            return MetricExportResult.SUCCESS
        return MetricExportResult.FAILURE

    def force_flush(self, timeout_millis: float = 10_000) -> bool:
        """Flush the sink."""
        self.sink.flush()
        return True

    def shutdown(self, timeout_millis: float = 30_000, **kwargs: Any) -> None:
        """Flush and close the sink."""
        self._close()


class JsonLinesLogExporter(_BatchSinkWriter, LogRecordExporter):
    """Writes each log record as one JSON object per line (the SDK's own record shape)."""

    def export(self, batch: Sequence[ReadableLogRecord]) -> LogRecordExportResult:
        """Write one line per record."""
        if self._attempt(
            lambda: self.sink.write(
                "".join(record.to_json(indent=None) + "\n" for record in batch)
            ),
            "writing %d log record(s) failed",
            len(batch),
        ):
            return LogRecordExportResult.SUCCESS
        return LogRecordExportResult.FAILURE
