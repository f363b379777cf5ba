"""Read the JSON-lines spans the ``file`` and ``console`` exporters write.

The line format is defined in :mod:`nemo.lens._sdk.exporters.encoding`; this module
is its reader, for ``nemo-lens summarize`` and ``nemo-lens convert``. It imports
nothing of OpenTelemetry (attribute names come from :mod:`nemo.lens.semconv`),
so reading a trace needs neither the SDK nor a running job.

What a line may be
    * a span: a JSON object with ``start_time_unix_nano`` (its other fields are
      checked: ``name`` a string, the times integers, ``end`` not before
      ``start``, ``attributes``/``resource`` objects, ...);
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
    Its process is its resource's ``nemo.rank``, ``nemo.run_id`` (else
    ``service.instance.id``) and ``service.name``; its group is its
    ``lens.group`` attribute, or ``nemo.span_group`` in a trace written before
    0.2 (:data:`NO_GROUP` when the span carries neither, e.g. one made by
    ``span_cm`` without a group).

Which process lifetime wrote it
    A job that crashed and resumed has, per rank, one process per lifetime,
    in one file (the ``file`` exporter appends) or one file each. A span's
    :attr:`SpanRecord.lifetime` is its resource's ``nemo.lifetime.id`` (a
    random id every ``setup_telemetry`` draws); in a trace written before that
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

import json
import os
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import IO, Any, Final, Literal, TypeAlias

from nemo.lens import semconv
from nemo.lens.cli._progress import Progress, progress

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


NO_GROUP: Final = "(none)"
"""The group of a span that carries no ``lens.group`` (nor old ``nemo.span_group``) attribute."""

STDIN: Final = "-"
"""The path that means standard input."""

MAX_LINE_BYTES: Final = 64 << 20
"""The longest line read (64 MiB; a span the exporters write is a few KB)."""

MAX_DEPTH: Final = 64
"""How deeply a line's JSON may nest (a span line nests five or six levels)."""

_MAX_TIME_NS: Final = 2**64
_STDIN_NAME: Final = "<stdin>"
_SNIPPET_CHARS: Final = 60
# Bytes read between progress updates: keeps the per-line cost of the bar negligible.
_PROGRESS_CHUNK: Final = 1 << 16


@dataclass(frozen=True)
class Location:
    """A line of an input, shown as ``path:line`` (line 0: the input as a whole)."""

    path: str
    line: int = 0

    def __str__(self) -> str:
        return f"{self.path}:{self.line}" if self.line else self.path


class TraceInputError(Exception):
    """An input cannot be read as a trace.

    ``str()`` is ``"<path>:<line>: <message>"``; :attr:`hint` says what to do
    about it, when there is something to say.
    """

    def __init__(self, location: Location, message: str, hint: str = "") -> None:
        super().__init__(f"{location}: {message}")
        self.location = location
        self.message = message
        self.hint = hint


@dataclass(frozen=True)
class Problem:
    """A line or input that ``skip_invalid`` skipped, and why."""

    location: Location
    message: str

    def __str__(self) -> str:
        return f"{self.location}: {self.message}"


@dataclass(frozen=True)
class Process:
    """The process a span came from: one rank of one run of one service."""

    rank: int | None
    run_id: str
    service: str

    @classmethod
    def from_resource(cls, resource: Mapping[str, Any]) -> Process:
        """Build the key from a span's resource attributes (missing ones stay empty)."""
        rank = resource.get(semconv.RANK)
        if isinstance(rank, bool) or not isinstance(rank, int):
            rank = None
        run_id = resource.get(semconv.RUN_ID) or resource.get(semconv.SERVICE_INSTANCE_ID)
        service = resource.get(semconv.SERVICE_NAME)
        return cls(
            rank=rank,
            run_id="" if run_id is None else str(run_id),
            service="" if service is None else str(service),
        )

    def sort_key(self) -> tuple[bool, int, str, str]:
        """Order by rank (unknown last), then run and service."""
        return (self.rank is None, self.rank or 0, self.run_id, self.service)

    def label(self, *, with_run: bool = False) -> str:
        """``rank 0`` (``unknown rank`` without ``nemo.rank``), plus the run when asked."""
        text = "unknown rank" if self.rank is None else f"rank {self.rank}"
        if with_run and self.run_id:
            text += f" of run {self.run_id}"
        return text


@dataclass(frozen=True)
class SpanEvent:
    """An event recorded on a span (an ``exception``, for instance)."""

    name: str
    time_ns: int
    attributes: Mapping[str, Any]


@dataclass(frozen=True)
class SpanRecord:
    """One span, as read from one trace line."""

    name: str
    group: str
    start_ns: int
    end_ns: int
    process: Process
    trace_id: str | None
    span_id: str | None
    parent_span_id: str | None
    status: str
    status_description: str | None
    attributes: Mapping[str, Any]
    events: tuple[SpanEvent, ...]
    lifetime: str = ""
    """The process lifetime that wrote the span (see the module docstring)."""

    @property
    def duration_ns(self) -> int:
        """End minus start, in nanoseconds."""
        return self.end_ns - self.start_ns


@dataclass
class Trace:
    """Everything read from the inputs."""

    spans: list[SpanRecord]
    problems: list[Problem] = field(default_factory=list)
    """What ``skip_invalid`` skipped (always empty without it: a problem is an error)."""
    other_records: int = 0
    """Metrics and log lines skipped because they are not spans."""


_Interned: TypeAlias = dict[Any, Any]
"""One shared :class:`Process` (and lifetime string) per key: a trace has millions of spans
but few processes."""


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
    ) -> None:
        self.paths = list(paths)
        self.skip_invalid = skip_invalid
        self.show_progress = show_progress
        self.problems: list[Problem] = []
        """What ``skip_invalid`` skipped, so far."""
        self.other_records = 0
        """Metrics and log lines skipped because they are not spans, so far."""
        self.spans_read = 0

    def __iter__(self) -> Iterator[SpanRecord]:
        interned: _Interned = {}
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
                yield from _read_one(path, counts, self.problems, interned, self.skip_invalid, bar)
                self.other_records += counts.other
                self.spans_read += counts.spans
                if counts.spans:
                    continue
                location = Location(_display(path))
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
        if not self.spans_read:
            names = ", ".join(_display(path) for path in paths)
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
    return Trace(spans=spans, problems=stream.problems, other_records=stream.other_records)


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
    counts: _FileCounts,
    problems: list[Problem],
    interned: _Interned,
    skip_invalid: bool,
    bar: Progress,
) -> Iterator[SpanRecord]:
    pending = 0
    name = _display(path)
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
                record = _parse_line(raw, Location(name, number), interned)
            except TraceInputError as error:
                if not skip_invalid:
                    raise
                counts.lines += 1
                problems.append(Problem(error.location, error.message))
                continue
            if record == "blank":
                continue
            counts.lines += 1
            if record == "other":
                counts.other += 1
            elif isinstance(record, SpanRecord):
                counts.spans += 1
                yield record
    bar.update(pending)


def _snippet(text: str) -> str:
    text = text.strip()
    return text if len(text) <= _SNIPPET_CHARS else text[: _SNIPPET_CHARS - 3] + "..."


def _parse_line(
    raw: bytes, location: Location, processes: _Interned
) -> SpanRecord | Literal["blank", "other"]:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise TraceInputError(location, "is not UTF-8 text; is this a trace file?") from None
    text = text.rstrip("\r\n")
    if not text.strip():
        return "blank"
    try:
        value = json.loads(text, parse_constant=_reject_constant)
        # Counting brackets is cheap; walking the value only when there are many.
        if text.count("[") + text.count("{") > MAX_DEPTH and _nested_deeper_than(value, MAX_DEPTH):
            raise RecursionError
    except (json.JSONDecodeError, _NonStandardConstant, RecursionError, ValueError) as exc:
        if isinstance(exc, json.JSONDecodeError):
            # Some messages end in " at", made to precede ": line 1 column 5".
            reason = f"{exc.msg.removesuffix(' at')} at column {exc.colno}"
        elif isinstance(exc, _NonStandardConstant):
            reason = f"{exc} is not valid JSON; the exporters write it as the string {str(exc)!r}"
        elif isinstance(exc, RecursionError):
            reason = f"nested more than {MAX_DEPTH} levels deep"
        else:  # int() refused a number: Python reads at most 4,300 digits
            reason = f"a number too long to read ({exc})"
        raise TraceInputError(
            location,
            f"not a JSON span record ({reason}): {_snippet(text)!r}",
            "to skip lines that are not spans (a program's own output captured with the "
            "console exporter, a line cut short by a killed job), pass --skip-invalid",
        ) from None
    if not isinstance(value, dict):
        raise TraceInputError(
            location, f"not a span record: a JSON {_json_type(value)}, not an object"
        )
    if "start_time_unix_nano" not in value:
        # The console exporter prints metrics and log records on the same stream.
        if "resource_metrics" in value or "severity_number" in value:
            return "other"
        raise TraceInputError(
            location, "not a span record: a JSON object without 'start_time_unix_nano'"
        )
    return _span_from_dict(value, location, processes)


def _nested_deeper_than(value: object, limit: int) -> bool:
    """Whether lists and objects in *value* nest more than *limit* levels (no recursion)."""
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Iterator[object] = iter(item.values())
        elif isinstance(item, list):
            children = iter(item)
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


class _NonStandardConstant(ValueError):
    """``NaN`` or ``Infinity`` in a line: Python's json reads them, strict JSON does not."""


def _reject_constant(name: str) -> object:
    # Accepting them would put NaN into a Chrome trace that viewers then refuse.
    raise _NonStandardConstant(name)


def _json_type(value: object) -> str:
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    return "number"


def _field_error(location: Location, key: str, expected: str, value: object) -> TraceInputError:
    shown = json.dumps(value)
    if len(shown) > _SNIPPET_CHARS:
        shown = shown[: _SNIPPET_CHARS - 3] + "..."
    return TraceInputError(location, f"span field {key!r} must be {expected}, got {shown}")


def _int_field(record: Mapping[str, Any], key: str, location: Location) -> int:
    value = record.get(key)
    if isinstance(value, bool) or not isinstance(value, int):
        raise _field_error(location, key, "an integer (nanoseconds since the epoch)", value)
    if not 0 <= value < _MAX_TIME_NS:
        raise _field_error(
            location, key, "an integer (nanoseconds since the epoch) from 0 to 2**64 - 1", value
        )
    return value


def _optional_str(record: Mapping[str, Any], key: str, location: Location) -> str | None:
    value = record.get(key)
    if value is not None and not isinstance(value, str):
        raise _field_error(location, key, "a string or null", value)
    return value


def _object_field(record: Mapping[str, Any], key: str, location: Location) -> dict[str, Any]:
    value = record.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _field_error(location, key, "a JSON object", value)
    return value


def _span_from_dict(record: dict[str, Any], location: Location, processes: _Interned) -> SpanRecord:
    name = record.get("name")
    if not isinstance(name, str):
        raise _field_error(location, "name", "a string", name)
    start = _int_field(record, "start_time_unix_nano", location)
    end = _int_field(record, "end_time_unix_nano", location)
    if end < start:
        raise TraceInputError(
            location,
            f"span {name!r} ends before it starts (end_time_unix_nano < start_time_unix_nano)",
        )
    attributes = _object_field(record, "attributes", location)
    status = _object_field(record, "status", location)
    description = status.get("description")
    raw_events = record.get("events") or []
    if not isinstance(raw_events, list):
        raise _field_error(location, "events", "a JSON array", raw_events)
    events: list[SpanEvent] = []
    for event in raw_events:
        if not isinstance(event, dict):
            raise _field_error(location, "events", "an array of objects", event)
        events.append(
            SpanEvent(
                name=str(event.get("name", "")),
                time_ns=_int_field(event, "time_unix_nano", location),
                attributes=_object_field(event, "attributes", location),
            )
        )
    group = attributes.get(semconv.SPAN_GROUP)
    if group is None:
        group = attributes.get(semconv.LEGACY_SPAN_GROUP)
    resource = _object_field(record, "resource", location)
    process = Process.from_resource(resource)
    lifetime = _lifetime(resource, location.path)
    return SpanRecord(
        name=name,
        group=group if isinstance(group, str) and group else NO_GROUP,
        start_ns=start,
        end_ns=end,
        process=processes.setdefault(process, process),
        trace_id=_optional_str(record, "trace_id", location),
        span_id=_optional_str(record, "span_id", location),
        parent_span_id=_optional_str(record, "parent_span_id", location),
        status=str(status.get("code", "UNSET")),
        status_description=None if description is None else str(description),
        attributes=attributes,
        events=tuple(events),
        lifetime=processes.setdefault(lifetime, lifetime),
    )


def _lifetime(resource: Mapping[str, Any], path: str) -> str:
    lifetime = resource.get(semconv.LIFETIME_ID)
    if isinstance(lifetime, str) and lifetime:
        return lifetime
    # Written before nemo.lifetime.id: the process, in this input.
    return f"{path}:{resource.get(semconv.HOST_NAME, '')}:{resource.get(semconv.PROCESS_PID, '')}"
