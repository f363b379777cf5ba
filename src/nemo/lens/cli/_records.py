"""One line of a trace: a span record, its process and lifetime, checked field by field.

The reader of the line format :mod:`nemo.lens._sdk.exporters.encoding` writes,
and of the SDK's ``to_json`` layout the console prints by default (turned into
the same fields by :mod:`nemo.lens.cli._sdk_json`; see
:mod:`nemo.lens.cli._trace_io` for what a line may be and how inputs are read).
Nothing of OpenTelemetry is imported: attribute names come from
:mod:`nemo.lens.semconv`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal, TypeAlias

from nemo.lens import semconv
from nemo.lens.cli._sdk_json import SdkJsonError, file_fields, is_sdk_span

__all__ = [
    "MAX_DEPTH",
    "NO_GROUP",
    "Interned",
    "Location",
    "Problem",
    "Process",
    "SpanEvent",
    "SpanRecord",
    "TraceInputError",
    "parse_line",
]

NO_GROUP: Final = "(none)"
"""The group of a span that carries no ``lens.group`` (nor old ``nemo.span_group``) attribute."""

MAX_DEPTH: Final = 64
"""How deeply a line's JSON may nest (a span line nests five or six levels)."""

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


def parse_line(
    raw: bytes, location: Location, processes: Interned
) -> SpanRecord | Literal["blank", "other"]:
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


def _span_from_dict(record: dict[str, Any], location: Location, processes: Interned) -> SpanRecord:
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
