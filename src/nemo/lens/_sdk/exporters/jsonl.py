"""JSON-lines exporters (the ``console`` and ``file`` exporters of every signal) and the
sinks they write whole lines through: standard output, or a file (``docs/reliability.md``).
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
from nemo.lens._sdk.exporters.encoding import (
    RESOURCE_ON_EVERY_LINE,
    LineLayout,
    encode_span,
    sdk_json_line,
)

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

# The loggers keep the names users configure them by (this code's module before it moved).
_logger = logging.getLogger("nemo.lens.exporters.jsonl")
_recovery_logger = logging.getLogger("nemo.lens.exporters.health")

_LINES_PER_TEXT: Final = 256  # lines joined at a time: a batch's whole text would be
# megabytes mapped afresh per batch, whose page faults cost more than the encoding

WRITE_BUFFER_BYTES: Final = 4 << 20
"""What a file sink gathers into one ``write(2)``: a batch of 4,096 span lines of a kilobyte
(``docs/architecture.md``, the file sink)."""


class LineSink(Protocol):
    """Where JSON lines go; thread-safe. :meth:`write` writes whole lines and flushes them;
    after :meth:`close`, writes raise ``ValueError``. A sink may also have
    ``write_texts(texts)``, which writes each text in order as ``write`` would, gathered."""

    def write(self, text: str) -> None: ...
    def flush(self) -> None: ...
    def close(self) -> None: ...


class StdoutSink:
    """Writes to whatever ``sys.stdout`` is at each write (so redirection sees it); one
    lock for every such sink, so the signals' lines never interleave; never closes it."""

    _lock = threading.Lock()

    def write(self, text: str) -> None:
        with StdoutSink._lock:
            sys.stdout.write(text)
            sys.stdout.flush()

    def flush(self) -> None:
        with StdoutSink._lock:
            sys.stdout.flush()

    def close(self) -> None:
        self.flush()


def _new_stdout_lock() -> None:
    StdoutSink._lock = threading.Lock()  # a forked child's: a parent thread may hold it


_fork.on_fork(after_in_child=_new_stdout_lock)


class _Landed:
    # Where one call's pieces landed in the file: from start to end.

    __slots__ = ("end", "start")

    def __init__(self) -> None:
        self.start = self.end = -1

    def add(self, fd: int, size: int) -> None:
        try:
            end = os.lseek(fd, 0, os.SEEK_CUR)  # O_APPEND: the end of that write
        except OSError:  # not a seekable file: nothing can be taken back
            self.start = self.end = -1
            return
        if self.end != end - size:  # the first piece, or another process wrote between
            self.start = end - size
        self.end = end

    def take_back(self, fd: int, done: int) -> bool:
        # Cut off what the call wrote: its earlier pieces and the *done* bytes of the one
        # that failed. False when some is still there (not truncatable, not seekable).
        try:
            here = os.lseek(fd, 0, os.SEEK_CUR)
            start = self.start if self.end == here - done and self.start != -1 else here - done
            if start >= here or os.fstat(fd).st_size != here:
                return True  # nothing of the call landed, or a process appended after it
            os.ftruncate(fd, start)
        except OSError:
            return done == 0
        return True


class FileSink:
    """Appends to a file (``O_APPEND``, parent directories created), opened at construction
    so that a path that cannot be written fails set-up, not every export. A call is
    gathered into as few ``write(2)`` as *buffer_bytes* allows and writes all of its text
    or none of it; a file removed or moved away is opened again before the next write.
    """

    def __init__(
        self, path: str | os.PathLike[str], *, buffer_bytes: int = WRITE_BUFFER_BYTES
    ) -> None:
        if buffer_bytes < 1:
            raise ValueError(f"FileSink(buffer_bytes=...) must be at least 1, got {buffer_bytes}")
        self.path = os.fspath(path)
        self._lock = threading.Lock()
        self._buffer_bytes = buffer_bytes
        self._buffer: bytearray | None = None
        self._torn = False
        # What a file opened again at the path must begin with (the trace file's headers).
        self.preamble: Callable[[], str] | None = None
        self._owes_preamble = False
        self._fd: int | None = self._open()
        _fork.register(self)

    def _open(self) -> int:
        parent = os.path.dirname(self.path)
        if parent:
            os.makedirs(parent, exist_ok=True)
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0)
        fd = os.open(self.path, flags, 0o666)
        status = os.fstat(fd)
        self._identity = (status.st_dev, status.st_ino)
        return fd

    def _after_fork_in_child(self) -> None:
        self._lock = threading.Lock()

    def write(self, text: str) -> None:
        """Append *text*; raises ``ValueError`` after :meth:`close`."""
        with self._lock:
            self._append(text.encode("utf-8"), _Landed())

    def write_texts(self, texts: Iterable[str]) -> None:
        """Append each text (whole lines) in order, gathered into as few writes as the
        buffer allows; raises ``ValueError`` after :meth:`close`."""
        with self._lock:
            landed = _Landed()
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
                            self._append(view[:used], landed)
                        used, end = 0, len(data)
                        if end > len(buffer):
                            self._append(data, landed)
                            continue
                    view[used:end] = data
                    used = end
                if used:
                    self._append(view[:used], landed)

    def _append(self, data: bytes | memoryview, landed: _Landed) -> None:
        fd = self._current_fd()
        if self._torn:
            os.write(fd, b"\n")  # end the broken line first
            self._torn = False
        if self._owes_preamble:
            preamble = self.preamble() if self.preamble is not None else ""
            data = preamble.encode("utf-8") + bytes(data)  # rare: once per new file
        left, done = memoryview(data), 0
        try:
            while left:  # a regular file takes it whole unless full or interrupted
                written = os.write(fd, left)
                done += written
                left = left[written:]
        except OSError:
            self._torn = not landed.take_back(fd, done)
            raise
        self._owes_preamble = False
        landed.add(fd, done)

    def _current_fd(self) -> int:
        # The open file, unless its path no longer names it (removed, rotated): then anew.
        fd = self._fd
        if fd is None:
            raise ValueError(f"{self.path} is closed")
        try:
            status = os.stat(self.path)
        except (FileNotFoundError, NotADirectoryError):
            status = None
        except OSError:  # cannot be told (a directory not searchable): keep on writing
            return fd
        if status is not None and (status.st_dev, status.st_ino) == self._identity:
            return fd
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
    # A sink, writes that fail once shut down, and a failure logged (as the SDK would).

    def __init__(self, sink: LineSink) -> None:
        self.sink = sink
        self._shut_down = False

    def _attempt(self, write: Callable[[], None], failure: str, *args: object) -> bool:
        if self._shut_down:
            return False
        try:
            write()
        except Exception:  # say which exporter failed
            _logger.exception("nemo.lens: " + failure, *args)
            return False
        return True

    def force_flush(self, timeout_millis: float = 30000) -> bool:
        self.sink.flush()
        return True

    def shutdown(self, *args: Any, **kwargs: Any) -> None:
        """Close the sink; later exports fail."""
        self._shut_down = True
        self.sink.close()


class JsonLinesSpanExporter(_SinkWriter, SpanExporter):
    """Writes each span as one JSON line, its resource on every line: the console's ``lens``
    layout (the ``file`` exporter is a subclass)."""

    line_layout: LineLayout = RESOURCE_ON_EVERY_LINE
    """How each line ends (the export guard encodes spans with it)."""

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return self.export_lines([encode_span(span, self.line_layout) for span in spans])

    def export_lines(self, lines: Sequence[str]) -> SpanExportResult:
        """Write *lines*, spans already encoded (each without its newline)."""
        written = self._attempt(
            lambda: self._write_lines(lines), "writing %d span(s) as JSON lines failed", len(lines)
        )
        return SpanExportResult.SUCCESS if written else SpanExportResult.FAILURE

    def _write_lines(self, lines: Sequence[str]) -> None:
        write_texts: Callable[[Iterable[str]], None] | None = getattr(
            self.sink, "write_texts", None
        )
        if write_texts is not None:
            write_texts(_texts(lines))
        else:  # a sink with write alone (standard output; one of the application's own)
            for text in _texts(lines):
                self.sink.write(text)


def _texts(lines: Sequence[str]) -> Iterator[str]:
    # The lines with their newlines, _LINES_PER_TEXT at a time.
    for first in range(0, len(lines), _LINES_PER_TEXT):
        chunk = list(lines[first : first + _LINES_PER_TEXT])
        chunk.append("")  # the last line's newline, without copying the text again
        yield "\n".join(chunk)


class SdkJsonSpanExporter(_SinkWriter, SpanExporter):
    """Writes each span as the SDK's ``ReadableSpan.to_json(indent=None)``, one per line:
    the ``console`` exporter's default (upstream v0.2.0's, which log pipelines parse)."""

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        written = self._attempt(
            lambda: self.sink.write("".join(sdk_json_line(span) + "\n" for span in spans)),
            "writing %d span(s) as JSON lines failed",
            len(spans),
        )
        return SpanExportResult.SUCCESS if written else SpanExportResult.FAILURE


class JsonLinesMetricExporter(_SinkWriter, MetricExporter):
    """Writes each metrics export as one JSON object per line."""

    def __init__(self, sink: LineSink) -> None:
        MetricExporter.__init__(self)
        _SinkWriter.__init__(self, sink)

    def export(
        self, metrics_data: MetricsData, timeout_millis: float = 10_000, **kwargs: Any
    ) -> MetricExportResult:
        written = self._attempt(
            lambda: self.sink.write(metrics_data.to_json(indent=None) + "\n"),
            "writing metrics as JSON lines failed",
        )
        return MetricExportResult.SUCCESS if written else MetricExportResult.FAILURE


class JsonLinesLogExporter(_SinkWriter, LogRecordExporter):
    """Writes each log record as one JSON object per line (the SDK's own record shape)."""

    def export(self, batch: Sequence[ReadableLogRecord]) -> LogRecordExportResult:
        written = self._attempt(
            lambda: self.sink.write(
                "".join(record.to_json(indent=None) + "\n" for record in batch)
            ),
            "writing %d log record(s) failed",
            len(batch),
        )
        return LogRecordExportResult.SUCCESS if written else LogRecordExportResult.FAILURE
