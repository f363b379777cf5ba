"""The careful pass: after DuckDB refuses the JSON lines, name the first bad record (file, line,
why), or with ``skip_invalid`` list every one and copy its input without them for DuckDB.
It checks each record as the staging SQL (:mod:`._jsonl`) does, and relates nothing."""

from __future__ import annotations

import datetime
import json
import os
import re
from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import IO, Any, Final

from nemo.lens.cli._engine._jsonl import KINDS, NAMING_KEYS

__all__ = ["MAX_DEPTH", "MAX_LINE_BYTES", "Location", "Problem", "TraceInputError", "careful_pass"]

MAX_LINE_BYTES: Final = 64 << 20
"""The longest line read (a span the exporters write is a few KB; ``/dev/zero`` has no end)."""
MAX_DEPTH: Final = 64
"""How deeply a line's JSON may nest (a span line nests five or six levels)."""
TRACE_FORMAT: Final = 2
"""The newest trace format this reader knows (a header announces its file's)."""

_MAX_NS: Final = 2**64
_ENGINE_NS: Final = 2**63
_NS: Final = "an integer (nanoseconds since the epoch)"
_SNIPPET_CHARS: Final = 60
_SKIP_HINT: Final = (
    "to skip lines that are not spans (a program's own output captured with the console "
    "exporter, a line cut short by a killed job), pass --skip-invalid"
)
_ISO: Final = re.compile(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,6}))?(Z|[+-]\d\d:\d\d)?")
_HEX_ID: Final = re.compile(r"0x[0-9a-fA-F]+")
_EPOCH: Final = datetime.datetime(1970, 1, 1)
_JSON_TYPES: Final = {list: "array", str: "string", type(None): "null", bool: "boolean"}


@dataclass(frozen=True)
class Location:
    """A line of an input, shown as ``path:line`` (line 0: the input as a whole)."""

    path: str
    line: int = 0

    def __str__(self) -> str:
        return f"{self.path}:{self.line}" if self.line else self.path


class TraceInputError(Exception):
    """An input cannot be read as a trace: ``str()`` is ``"<path>:<line>: <message>"``;
    :attr:`hint` says what to do about it, when there is something to say."""

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


class _Bad(Exception):
    """What is wrong with one record (its caller knows the line)."""

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.hint = hint


def _snippet(text: str) -> str:
    return text if len(text) <= _SNIPPET_CHARS else text[: _SNIPPET_CHARS - 3] + "..."


def _want(record: str, key: str, expected: str, value: object, shown: str = "") -> _Bad:
    return _Bad(
        f"{record} field {key!r} must be {expected}, got {shown or _snippet(json.dumps(value))}"
    )


def _ns(value: object, key: str, record: str = "span") -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _want(record, key, _NS, value)
    if not 0 <= value < _MAX_NS:
        raise _want(record, key, f"{_NS} from 0 to 2**64 - 1", value)
    if value >= _ENGINE_NS:
        raise _Bad(
            f"{record} field {key!r} holds a time past the year 2262 (2**63 ns since the "
            "epoch), which the engine cannot hold"
        )
    return value


def _object(value: object, key: str, record: str = "span", shown: str = "") -> None:
    if value is not None and not isinstance(value, dict):
        raise _want(record, key, "a JSON object", value, shown)


def _lifetime(value: object, prefix: str = "") -> None:
    if not (isinstance(value, str) and value):
        raise _Bad(f"{prefix}'lifetime' must be a non-empty string, got {json.dumps(value)}")


def _iso_ns(value: object, key: str) -> int:
    """An ISO-8601 time with its UTC offset, as the SDK writes it, in epoch ns."""
    found = _ISO.fullmatch(value) if isinstance(value, str) else None
    if found is not None and found[3] is None:
        raise _Bad(f"span field {key!r} must say its UTC offset ('Z'), got {value!r}")
    try:
        if found is None:
            raise ValueError
        moment = datetime.datetime.strptime(found[1], "%Y-%m-%dT%H:%M:%S")
    except ValueError:
        raise _Bad(
            f"span field {key!r} must be an ISO-8601 time such as "
            f"'2025-01-01T12:00:00.123456Z', got {value!r}"
        ) from None
    zone = found[3]
    minutes = 0 if zone == "Z" else int(zone[0] + "1") * (int(zone[1:3]) * 60 + int(zone[4:]))
    micros = (moment - _EPOCH) // datetime.timedelta(microseconds=1) - minutes * 60_000_000
    nanoseconds = (micros + int((found[2] or "0").ljust(6, "0"))) * 1000
    if not 0 <= nanoseconds < _ENGINE_NS:
        raise _Bad(
            f"span field {key!r} must be a time from 1970 to 2262 (0 to 2**63 - 1 ns since "
            f"the epoch), got {value!r}"
        )
    return nanoseconds


def _events(
    events: object, time_key: str, read_time: Callable[[object, str], int], label: str
) -> None:
    """*events*: absent, or an array of objects, each with its time and maybe attributes."""
    if events is not None and not isinstance(events, list):
        raise _want("span", "events", "a JSON array", events)
    for event in events or ():
        if not isinstance(event, dict):
            raise _want("span", "events", "an array of objects", event)
        read_time(event.get(time_key), label + time_key)
        _object(event.get("attributes"), label + "attributes")


def _naming(attributes: object) -> None:
    """The attributes naming a span's group and category are strings: a number there is
    no group, and counting the span under ``(none)`` would hide it."""
    if not isinstance(attributes, dict):
        return
    for key in NAMING_KEYS:
        found = attributes.get(key)
        if found is not None and not isinstance(found, str):
            raise _Bad(
                f"span attribute {key!r} must be a string (a span group's name), got "
                f"{_snippet(json.dumps(found))}",
                "to skip such spans, pass --skip-invalid",
            )


def _check_span(value: Mapping[str, Any], kind: str) -> None:
    """A span or open-span record of the ``file`` layout (formats 1 and 2)."""
    if value.get("lifetime") is not None:
        _lifetime(value["lifetime"])
    name = value.get("name")
    if not isinstance(name, str):
        raise _want("span", "name", "a string", name)
    start = _ns(value.get("start_time_unix_nano"), "start_time_unix_nano")
    if kind == "open":
        _ns(value.get("open_at_unix_nano"), "open_at_unix_nano")
        if value.get("events") not in (None, []):
            raise _want("span", "events", "empty in an open-span record", value["events"])
    elif _ns(value.get("end_time_unix_nano"), "end_time_unix_nano") < start:
        raise _Bad(
            f"span {name!r} ends before it starts (end_time_unix_nano < start_time_unix_nano)"
        )
    else:
        _events(value.get("events"), "time_unix_nano", _ns, "")
    _object(value.get("attributes"), "attributes")
    _naming(value.get("attributes"))
    _object(value.get("resource"), "resource")
    for key in ("trace_id", "span_id", "parent_span_id"):
        if not isinstance(value.get(key), (str, type(None))):
            raise _want("span", key, "a string or null", value[key])


def _check_sdk(value: Mapping[str, Any]) -> None:
    """A span in the SDK's ``to_json`` layout (what the ``console`` exporter prints)."""
    if not isinstance(value.get("name"), str):
        raise _want("span", "name", "a string", value.get("name"))
    context = value["context"]
    _object(context, "context", shown=repr(context))
    ids = {"context.trace_id": context.get("trace_id"), "context.span_id": context.get("span_id")}
    for key, found in {**ids, "parent_id": value.get("parent_id")}.items():
        if found is not None and not (isinstance(found, str) and _HEX_ID.fullmatch(found)):
            raise _Bad(f"span field {key!r} must be a 0x-prefixed hex id, got {found!r}")
    start = _iso_ns(value["start_time"], "start_time")
    if _iso_ns(value.get("end_time"), "end_time") < start:
        raise _Bad(f"span {value['name']!r} ends before it starts (end_time < start_time)")
    for key in ("attributes", "resource"):
        _object(value.get(key), key, shown=repr(value.get(key)))
    _naming(value.get("attributes"))
    _object((value.get("resource") or {}).get("attributes"), "resource.attributes")
    _events(value.get("events"), "timestamp", _iso_ns, "events.")
    if not isinstance(value.get("links"), (list, type(None))):
        raise _want("span", "links", "a JSON array", value["links"])


def _check_header(value: Mapping[str, Any]) -> None:
    version = value["trace_format"]
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise _want("header", "trace_format", "a positive integer", version)
    if version > TRACE_FORMAT:
        raise _Bad(
            f"written in trace format {version}; this nemo-lens reads formats up to {TRACE_FORMAT}",
            "upgrade nemo-lens (pip install -U nemo-lens) to read this trace",
        )
    _lifetime(value.get("lifetime"), "header field ")
    _object(value.get("resource"), "resource", "header")
    _object(value.get("attributes"), "attributes", "header")


def _check(raw: bytes) -> str:
    """The kind of the record on the line *raw* (``blank`` for none), or :class:`_Bad`."""
    try:
        text = raw.decode("utf-8").rstrip("\r\n")
    except UnicodeDecodeError:
        raise _Bad("is not UTF-8 text; is this a trace file?") from None
    if not text.strip():
        return "blank"
    value = _decode(text)
    if not isinstance(value, dict):
        kind = _JSON_TYPES.get(type(value), "number")
        raise _Bad(f"not a span record: a JSON {kind}, not an object")
    if value.get("context") is not None and value.get("start_time") is not None:
        kind = "sdk"
    else:
        kind = next((kind for key, kind in KINDS if value.get(key) is not None), "")
    if not kind:
        raise _Bad("not a span record: a JSON object without 'start_time_unix_nano'")
    _object(value.get("status"), "status", "header" if kind == "header" else "span")
    if kind in ("span", "open"):
        _check_span(value, kind)
    elif kind == "sdk":
        _check_sdk(value)
    elif kind == "header":
        _check_header(value)
    elif kind == "alive":
        _lifetime(value.get("lifetime"))
        _ns(value["alive_at_unix_nano"], "alive_at_unix_nano", "alive record")
    return kind


class _NonStandardConstant(ValueError):
    """``NaN`` or ``Infinity``: Python's json reads them, strict JSON does not."""


class _Duplicate(ValueError):
    """A record holds this key twice."""


def _reject_constant(name: str) -> object:
    raise _NonStandardConstant(name)


_LAST_PAIRS: list[list[tuple[str, Any]]] = [[]]
"""The pairs of the object decoded last: a line's own, when it is an object."""


def _object_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    _LAST_PAIRS[0] = pairs
    return dict(pairs)


_DECODER: Final = json.JSONDecoder(parse_constant=_reject_constant, object_pairs_hook=_object_pairs)


def _decode(text: str) -> Any:
    try:
        value = _DECODER.decode(text)
        # Counting brackets is cheap; walking the value only when there are many.
        if text.count("[") + text.count("{") > MAX_DEPTH and _deeper_than(value, MAX_DEPTH):
            raise RecursionError
        if isinstance(value, dict) and len(value) < len(_LAST_PAIRS[0]):
            # DuckDB refuses a record holding a key twice (inside its fields it takes one).
            keys = [key for key, _ in _LAST_PAIRS[0]]
            raise _Duplicate(next(key for key in keys if keys.count(key) > 1))
    except (json.JSONDecodeError, RecursionError, ValueError) as exc:
        if isinstance(exc, _Duplicate):
            reason = f"the key {str(exc)!r} appears twice"
        elif isinstance(exc, json.JSONDecodeError):
            # Some messages end in " at", made to precede ": line 1 column 5".
            reason = f"{exc.msg.removesuffix(' at')} at column {exc.colno}"
        elif isinstance(exc, _NonStandardConstant):
            reason = f"{exc} is not valid JSON; the exporters write it as the string {str(exc)!r}"
        elif isinstance(exc, RecursionError):
            reason = f"nested more than {MAX_DEPTH} levels deep"
        else:  # int() refused a number: Python reads at most 4,300 digits
            reason = f"a number too long to read ({exc})"
        raise _Bad(
            f"not a JSON span record ({reason}): {_snippet(text.strip())!r}", _SKIP_HINT
        ) from None
    return value


def _deeper_than(value: object, limit: int) -> bool:
    """Whether lists and objects in *value* nest more than *limit* levels (no recursion)."""
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            if depth > limit:
                return True
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return False


def _open(path: str) -> IO[bytes]:
    location = Location(path)
    try:
        return open(path, "rb")
    except IsADirectoryError:
        hint = f"pass the trace files in it, e.g. {os.path.join(path, '*.jsonl')}"
        raise TraceInputError(location, "is a directory", hint) from None
    except FileNotFoundError:
        raise TraceInputError(
            location,
            "no such file",
            "the file exporter writes traces/{service_name}-{run_id}-rank{rank}.jsonl "
            "unless NEMO_LENS_TRACE_FILE says otherwise",
        ) from None
    except OSError as exc:
        raise TraceInputError(location, f"cannot be read: {exc.strerror or exc}") from None


def _pass_one(
    path: str, name: str, copy: IO[bytes], problems: list[Problem], skip: bool, bar: Any
) -> Counter[str]:
    """Check one input's lines, counting them by kind; write each to *copy*, a bad one blank."""
    counts: Counter[str] = Counter()
    with _open(path) as stream:
        # Read as bytes with a limit: text that is not UTF-8 is reported at its line, and
        # one endless line cannot take all the memory.
        for number, raw in enumerate(iter(lambda: stream.readline(MAX_LINE_BYTES + 1), b""), 1):
            bar.update(len(raw))
            endless = len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n")
            try:
                if endless:
                    raise _Bad(
                        f"line longer than {MAX_LINE_BYTES >> 20} MiB; is this a trace file? "
                        "(the rest of this input was not read)"
                    )
                kind = _check(raw)
            except _Bad as bad:
                error = TraceInputError(Location(name, number), str(bad), bad.hint)
                if not skip:
                    raise error from None
                problems.append(Problem(error.location, error.message))
                raw, kind = b"\n", "skipped"
            copy.write(raw)
            counts[kind] += 1
            if endless:
                break
    return counts


def careful_pass(
    paths: Sequence[str],
    names: Mapping[str, str],
    streams: Collection[str],
    scratch: str,
    skip_invalid: bool,
    show_progress: bool | None,
) -> tuple[dict[str, str], list[Problem], int]:
    """Check every record of *paths*, in order, as the SQL checks it.

    Raises :class:`TraceInputError` for the first bad record or input; with *skip_invalid*,
    lists them instead. Returns the copies (in *scratch*) DuckDB reads in place of an input:
    path -> its copy, bad lines blank (every one of *streams*, which can be read only once,
    and every input with a bad line); the problems; and how many span records were read.
    *names* maps a path to the name messages give it.
    """
    from nemo.lens.cli._progress import progress

    copies: dict[str, str] = {}
    problems: list[Problem] = []
    spans = 0
    total = sum(os.path.getsize(p) for p in paths if p not in streams)
    with progress("checking", total=total, unit="B", unit_scale=True, enabled=show_progress) as bar:
        for index, path in enumerate(paths):
            name = names.get(path, path)
            copy = os.path.join(scratch, f"careful-{index}.jsonl")
            keep = path in streams or skip_invalid
            with open(copy if keep else os.devnull, "wb") as out:
                counts = _pass_one(path, name, out, problems, skip_invalid, bar)
            if path in streams or counts["skipped"]:
                copies[path] = copy
            found = counts["span"] + counts["open"] + counts["sdk"]
            spans += found
            if found:
                continue
            lines = sum(counts.values()) - counts["blank"]
            if counts["other"]:
                message = (
                    f"no span records, only {counts['other']} metrics or log record(s); pass "
                    "the span file (the one without .metrics or .logs in its name)"
                )
            else:
                message = (
                    f"no span records among its {lines} line(s)"
                    if lines
                    else "is empty: no span records"
                )
            if not skip_invalid:
                hint = "is the job still running, or did this rank export nothing?"
                raise TraceInputError(Location(name), message, hint)
            problems.append(Problem(Location(name), message))
    return copies, problems, spans
