"""One line of a trace: what kind of record it is, and a span record checked field by field.

The reader of the lines the exporters write: the ``file`` exporter's trace
format 2 (``docs/trace-format.md``: a header per process lifetime, span lines
that name their lifetime, open-span and alive records), format 1's span lines
that carry their resource (older files, the console's ``lens`` layout), and the
SDK's ``to_json`` layout the console prints by default (turned into the same
fields by :mod:`nemo.lens.cli._sdk_json`). :func:`decode_line` reads a line as
one JSON object, :func:`kind_of` says what it records, :func:`span_from_dict`
checks a span's fields; :mod:`nemo.lens.cli._lifetimes` relates the records of
a lifetime, and :mod:`nemo.lens.cli._trace_io` reads the inputs. Nothing of
OpenTelemetry is imported: attribute names come from :mod:`nemo.lens.semconv`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal, TypeAlias

from nemo.lens import semconv
from nemo.lens.cli._sdk_json import SdkJsonError, file_fields, is_sdk_span

__all__ = [
    "MAX_DEPTH",
    "NO_GROUP",
    "TRACE_FORMAT",
    "Interned",
    "LineKind",
    "Location",
    "Problem",
    "Process",
    "SpanEvent",
    "SpanRecord",
    "TraceInputError",
    "decode_line",
    "header_of",
    "int_field",
    "kind_of",
    "span_from_dict",
]

NO_GROUP: Final = "(none)"
"""The group of a span that carries no ``lens.group`` (nor old ``nemo.span_group``) attribute."""

MAX_DEPTH: Final = 64
"""How deeply a line's JSON may nest (a span line nests five or six levels)."""

TRACE_FORMAT: Final = 2
"""The newest trace format this reader knows (a header announces its file's)."""

LineKind: TypeAlias = Literal["header", "span", "open", "alive", "other"]
"""What a JSON object of a trace records (:func:`kind_of`)."""

_MAX_TIME_NS: Final = 2**64
_SNIPPET_CHARS: Final = 60


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
        """Build the key from a span's resource attributes (missing ones stay empty).

        The rank is ``dl.rank`` (upstream's key, which nemo.lens sends too), else
        ``nemo.rank`` (all a trace written before 0.2 has); the run is ``nemo.run.id``,
        else ``nemo.run_id``, else ``service.instance.id``.
        """
        rank = next(
            (
                value
                for value in (resource.get(semconv.DL_RANK), resource.get(semconv.RANK))
                if isinstance(value, int) and not isinstance(value, bool)
            ),
            None,
        )
        run_id = (
            resource.get(semconv.NEMO_RUN_ID)
            or resource.get(semconv.RUN_ID)
            or resource.get(semconv.SERVICE_INSTANCE_ID)
        )
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
        """``rank 0`` (``unknown rank`` without ``dl.rank`` or ``nemo.rank``), plus the run
        when asked."""
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
    resource: Mapping[str, Any] = field(default_factory=dict)
    """Its resource: its line's own, or its lifetime header's."""
    source: str = ""
    """The input it was read from, as messages name it."""
    line: int = 0
    """Its line in that input."""

    @property
    def duration_ns(self) -> int:
        """End minus start, in nanoseconds."""
        return self.end_ns - self.start_ns


Interned: TypeAlias = dict[Any, Any]
"""One shared :class:`Process` (and lifetime string) per key: a trace has millions of spans
but few processes."""


def _snippet(text: str) -> str:
    text = text.strip()
    return text if len(text) <= _SNIPPET_CHARS else text[: _SNIPPET_CHARS - 3] + "..."


def decode_line(raw: bytes, location: Location) -> dict[str, Any] | Literal["blank"]:
    """The JSON object of one line (a span in the SDK's layout already in the ``file``
    layout's fields), or ``"blank"``; anything else raises :class:`TraceInputError`."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise TraceInputError(location, "is not UTF-8 text; is this a trace file?") from None
    text = text.rstrip("\r\n")
    if not text.strip():
        return "blank"
    try:
        value = _DECODER.decode(text)
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
    if is_sdk_span(value):
        # The console exporter's default layout: the SDK's to_json of the span.
        try:
            value = file_fields(value)
        except SdkJsonError as exc:
            raise TraceInputError(location, str(exc)) from None
    found: dict[str, Any] = value
    return found


def kind_of(value: Mapping[str, Any], location: Location) -> LineKind:
    """What *value* records, by its keys (each kind has one no other has)."""
    if "trace_format" in value:
        return "header"
    if "open_at_unix_nano" in value:
        return "open"
    if "alive_at_unix_nano" in value:
        return "alive"
    if "start_time_unix_nano" in value:
        return "span"
    # The console exporter prints metrics and log records on the same stream.
    if "resource_metrics" in value or "severity_number" in value:
        return "other"
    raise TraceInputError(
        location, "not a span record: a JSON object without 'start_time_unix_nano'"
    )


def header_of(value: Mapping[str, Any], location: Location) -> tuple[str, dict[str, Any]]:
    """The lifetime a header introduces and its resource; a format newer than
    :data:`TRACE_FORMAT` is an error (what it holds may not be read right)."""
    version = value.get("trace_format")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise _field_error(location, "trace_format", "a positive integer", version, "header")
    if version > TRACE_FORMAT:
        raise TraceInputError(
            location,
            f"written in trace format {version}; this nemo-lens reads formats up to {TRACE_FORMAT}",
            "upgrade nemo-lens (pip install -U nemo-lens) to read this trace",
        )
    lifetime = value.get("lifetime")
    if not isinstance(lifetime, str) or not lifetime:
        raise _field_error(location, "lifetime", "a non-empty string", lifetime, "header")
    return lifetime, _object_field(value, "resource", location)


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


# One decoder for every line (json.loads with options would build one per call).
_DECODER: Final = json.JSONDecoder(parse_constant=_reject_constant)


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


def _field_error(
    location: Location, key: str, expected: str, value: object, record: str = "span"
) -> TraceInputError:
    shown = json.dumps(value)
    if len(shown) > _SNIPPET_CHARS:
        shown = shown[: _SNIPPET_CHARS - 3] + "..."
    return TraceInputError(location, f"{record} field {key!r} must be {expected}, got {shown}")


def int_field(record: Mapping[str, Any], key: str, location: Location) -> int:
    """*record*'s *key*: a time in nanoseconds since the epoch (else an error)."""
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


def span_from_dict(
    record: dict[str, Any],
    location: Location,
    processes: Interned,
    resource: Mapping[str, Any] | None = None,
    lifetime: str | None = None,
) -> SpanRecord:
    """The span *record* holds, checked field by field.

    Its process and lifetime come from its own ``resource`` (format 1), or are
    given: the *resource* of its lifetime's header and the *lifetime* it names
    (format 2). An open record (no end yet) reads as ending when it starts.
    """
    name = record.get("name")
    if not isinstance(name, str):
        raise _field_error(location, "name", "a string", name)
    start = int_field(record, "start_time_unix_nano", location)
    end = (
        start
        if "open_at_unix_nano" in record
        else int_field(record, "end_time_unix_nano", location)
    )
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
                time_ns=int_field(event, "time_unix_nano", location),
                attributes=_object_field(event, "attributes", location),
            )
        )
    group = attributes.get(semconv.SPAN_GROUP)
    if group is None:
        group = attributes.get(semconv.LEGACY_SPAN_GROUP)
    if resource is None:
        resource = _object_field(record, "resource", location)
    process = Process.from_resource(resource)
    if lifetime is None:
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
        resource=resource,
        source=location.path,
        line=location.line,
    )


def _lifetime(resource: Mapping[str, Any], path: str) -> str:
    lifetime = resource.get(semconv.LIFETIME_ID)
    if isinstance(lifetime, str) and lifetime:
        return lifetime
    # Written before nemo.lifetime.id: the process, in this input.
    return f"{path}:{resource.get(semconv.HOST_NAME, '')}:{resource.get(semconv.PROCESS_PID, '')}"
