"""Read the JSON-lines spans the ``file`` and ``console`` exporters write.

The line format is defined in :mod:`nemo.lens._sdk.exporters.encoding`; this module
is its reader, for ``nemo-lens summarize`` and ``nemo-lens convert``. It imports
nothing of OpenTelemetry (attribute names come from :mod:`nemo.lens.semconv`),
so reading a trace needs neither the SDK nor a running job.

What a line may be
    * a span: a JSON object with ``start_time_unix_nano`` (its other fields are
      checked: ``name`` a string, the times integers, ``end`` not before
      ``start``, ``attributes``/``resource`` objects, ...), or a span in the
      OpenTelemetry SDK's ``to_json`` layout, which the ``console`` exporter
      prints by default (``context`` with ``0x`` ids, ISO-8601 ``start_time`` /
      ``end_time``; read to the microsecond: :mod:`nemo.lens.cli._sdk_json`);
    * a metrics or log record, which the ``console`` exporter prints on the
      same stream (``resource_metrics`` / ``severity_number``): skipped;
    * a blank line: skipped.

    Anything else -- text that is not JSON, a truncated last line left by a
    killed job, a JSON value of another shape, JSON nested deeper than
    :data:`MAX_DEPTH` or holding a number too long to read, a time outside
    0..2**64 ns -- is an error naming the file and the line. With
    ``skip_invalid`` such lines are skipped and reported as :class:`Problem`
    entries instead, which is what captured console output needs: the
    program's own prints are interleaved with the spans.

    A line is read whole only up to :data:`MAX_LINE_BYTES`; a longer one (a
    file that is not a trace: ``/dev/zero`` has no line end at all) is
    reported, and the rest of that input is not read, so memory stays bounded
    whatever the input.

Where a span belongs
    Its process is its resource's ``dl.rank`` (else ``nemo.rank``, all a trace
    written before 0.2 has), ``nemo.run.id`` (else ``nemo.run_id``, else
    ``service.instance.id``) and ``service.name``; its group is its
    ``lens.group`` attribute, or ``nemo.span_group`` in a trace written before
    0.2 (:data:`NO_GROUP` when the span carries neither, e.g. one made by
    ``span_cm`` without a group).

Which process lifetime wrote it
    A job that crashed and resumed has, per rank, one process per lifetime,
    in one file (the ``file`` exporter appends) or one file each. A span's
    :attr:`SpanRecord.lifetime` is the lifetime its line names (format 2), or
    its resource's ``nemo.lifetime.id`` (a random id every
    ``setup_telemetry`` draws); in a trace written before that
    attribute existed, its ``host.name`` and ``process.pid`` with the input's
    name (a pid that a container gives every lifetime is then told apart only
    by the file).

Streaming
    :class:`TraceStream` yields the spans one at a time as it reads them, so a
    command that keeps only what it computes holds no more than one span in
    memory; :func:`read_traces` collects them all (what ``convert`` needs to
    lay a trace out).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import IO, Final

from nemo.lens.cli._lifetimes import TraceBook
from nemo.lens.cli._progress import Progress, progress
from nemo.lens.cli._records import (
    MAX_DEPTH,
    NO_GROUP,
    Location,
    Problem,
    Process,
    SpanEvent,
    SpanRecord,
    TraceInputError,
)

__all__ = [
    "MAX_DEPTH",
    "MAX_LINE_BYTES",
    "NO_GROUP",
    "STDIN",
    "Location",
    "Problem",
    "Process",
    "SpanEvent",
    "SpanRecord",
    "Trace",
    "TraceInputError",
    "TraceStream",
    "read_traces",
]

STDIN: Final = "-"
"""The path that means standard input."""

MAX_LINE_BYTES: Final = 64 << 20
"""The longest line read (64 MiB; a span the exporters write is a few KB)."""

_STDIN_NAME: Final = "<stdin>"
# Bytes read between progress updates: keeps the per-line cost of the bar negligible.
_PROGRESS_CHUNK: Final = 1 << 16


@dataclass
class Trace:
    """Everything read from the inputs."""

    spans: list[SpanRecord]
    problems: list[Problem] = field(default_factory=list)
    """What ``skip_invalid`` skipped (always empty without it: a problem is an error)."""
    other_records: int = 0
    """Metrics and log lines skipped because they are not spans."""
    reconstructed: int = 0
    """Spans that never ended, their process dead, ended by the reader."""


@dataclass
class _FileCounts:
    spans: int = 0
    other: int = 0
    lines: int = 0  # non-blank


class TraceStream:
    """The spans of every input in ``paths`` (``"-"`` is standard input), read lazily.

    Iterating yields each span as its line is read. It raises
    :class:`TraceInputError` for an input that is missing, a directory,
    unreadable or holds no span, and (without ``skip_invalid``) for the first
    line that is neither a span nor a metrics or log record. With
    ``skip_invalid`` such lines and inputs become :attr:`problems`, and an
    error is raised (at the end) only when no input holds a single span.
    ``show_progress`` is as for :func:`nemo.lens.cli._progress.progress`
    (``None``: when stderr is a terminal). Iterate once: standard input cannot
    be read twice.
    """

    def __init__(
        self,
        paths: Sequence[str],
        *,
        skip_invalid: bool = False,
        show_progress: bool | None = None,
        names: dict[str, str] | None = None,
    ) -> None:
        self.paths = list(paths)
        self.names = dict(names or {})
        """Path -> the name messages give it (a spooled copy of standard input: ``<stdin>``)."""
        self.skip_invalid = skip_invalid
        self.show_progress = show_progress
        self.problems: list[Problem] = []
        """What ``skip_invalid`` skipped, so far."""
        self.other_records = 0
        """Metrics and log lines skipped because they are not spans, so far."""
        self.spans_read = 0
        self.reconstructed = 0
        """Spans that never ended, their process dead, ended by the reader (after every input)."""

    def __iter__(self) -> Iterator[SpanRecord]:
        book = TraceBook()
        paths = self.paths
        with progress(
            "reading",
            total=_total_size(paths),
            unit="B",
            unit_scale=True,
            enabled=self.show_progress,
        ) as bar:
            for path in paths:
                counts = _FileCounts()
                yield from _read_one(
                    path,
                    self.names.get(path, _display(path)),
                    counts,
                    self.problems,
                    book,
                    self.skip_invalid,
                    bar,
                )
                self.other_records += counts.other
                self.spans_read += counts.spans
                if counts.spans:
                    continue
                location = Location(self.names.get(path, _display(path)))
                if counts.other:
                    message = (
                        f"no span records, only {counts.other} metrics or log record(s); pass "
                        "the span file (the one without .metrics or .logs in its name)"
                    )
                elif counts.lines:
                    message = f"no span records among its {counts.lines} line(s)"
                else:
                    message = "is empty: no span records"
                if not self.skip_invalid:
                    raise TraceInputError(
                        location,
                        message,
                        "is the job still running, or did this rank export nothing?",
                    )
                self.problems.append(Problem(location, message))
        yield from book.finish()
        self.reconstructed = book.reconstructed
        if not self.spans_read:
            names = ", ".join(self.names.get(path, _display(path)) for path in paths)
            raise TraceInputError(Location(names), "no span records in any input")


def read_traces(
    paths: Sequence[str],
    *,
    skip_invalid: bool = False,
    show_progress: bool | None = None,
) -> Trace:
    """Read every span of every input in ``paths`` into memory (see :class:`TraceStream`)."""
    stream = TraceStream(paths, skip_invalid=skip_invalid, show_progress=show_progress)
    spans = list(stream)
    return Trace(
        spans=spans,
        problems=stream.problems,
        other_records=stream.other_records,
        reconstructed=stream.reconstructed,
    )


def _display(path: str) -> str:
    return _STDIN_NAME if path == STDIN else path


def _total_size(paths: Sequence[str]) -> int | None:
    total = 0
    for path in paths:
        if path == STDIN:
            return None
        try:
            total += os.path.getsize(path)
        except OSError:
            return None  # reported properly when the input is opened
    return total


@contextmanager
def _open(path: str) -> Iterator[IO[bytes]]:
    if path == STDIN:
        yield sys.stdin.buffer
        return
    location = Location(path)
    if os.path.isdir(path):
        raise TraceInputError(
            location,
            "is a directory",
            f"pass the trace files in it, e.g. {os.path.join(path, '*.jsonl')}",
        )
    try:
        stream = open(path, "rb")  # noqa: SIM115 - closed in the finally below
    except FileNotFoundError:
        raise TraceInputError(
            location,
            "no such file",
            "the file exporter writes traces/{service_name}-{run_id}-rank{rank}.jsonl "
            "unless NEMO_LENS_TRACE_FILE says otherwise",
        ) from None
    except OSError as exc:
        raise TraceInputError(location, f"cannot be read: {exc.strerror or exc}") from None
    try:
        yield stream
    finally:
        stream.close()


def _read_one(
    path: str,
    name: str,
    counts: _FileCounts,
    problems: list[Problem],
    book: TraceBook,
    skip_invalid: bool,
    bar: Progress,
) -> Iterator[SpanRecord]:
    pending = 0
    with _open(path) as stream:
        # Lines are read as bytes and decoded one by one, so text that is not
        # UTF-8 is reported at its line instead of failing the whole read; and
        # read with a limit, so one endless line cannot take all the memory.
        lines = iter(lambda: stream.readline(MAX_LINE_BYTES + 1), b"")
        for number, raw in enumerate(lines, 1):
            pending += len(raw)
            if pending >= _PROGRESS_CHUNK:
                bar.update(pending)
                pending = 0
            if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
                error = TraceInputError(
                    Location(name, number),
                    f"line longer than {MAX_LINE_BYTES >> 20} MiB; is this a trace file? (the "
                    "rest of this input was not read)",
                )
                if not skip_invalid:
                    raise error
                counts.lines += 1
                problems.append(Problem(error.location, error.message))
                break
            try:
                kind, spans = book.read(raw, Location(name, number))
            except TraceInputError as error:
                if not skip_invalid:
                    raise
                counts.lines += 1
                problems.append(Problem(error.location, error.message))
                continue
            if kind == "blank":
                continue
            counts.lines += 1
            if kind == "other":
                counts.other += 1
            elif kind in ("span", "open"):
                counts.spans += 1
            yield from spans
    bar.update(pending)
