"""Reading a span line in the OpenTelemetry SDK's ``to_json`` layout, the console's default.

The ``console`` exporter prints a span as ``ReadableSpan.to_json(indent=None)``
(:func:`nemo.lens._sdk.exporters.encoding.sdk_json_line`): ids as ``0x``-prefixed hex under
``context``, ISO-8601 UTC times, ``kind`` as ``SpanKind.X``, ``status.status_code``,
the resource under ``resource.attributes``. :func:`file_fields` turns such a
record into the fields of the ``file`` exporter's line, which
:mod:`nemo.lens.cli._records` reads, so both layouts are read the same way.
Nothing of OpenTelemetry is imported.

The SDK writes times to the microsecond: a span read from this layout has its
times in whole microseconds (as nanoseconds).
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Mapping
from typing import Any, Final

__all__ = ["SdkJsonError", "event_time_ns", "file_fields", "is_sdk_span"]

_EPOCH: Final = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
_MICROSECOND: Final = datetime.timedelta(microseconds=1)
_HEX_ID: Final = re.compile(r"0x([0-9a-fA-F]+)")
_KIND_PREFIX: Final = "SpanKind."
_MAX_TIME_NS: Final = 2**64


class SdkJsonError(ValueError):
    """A field of a ``to_json`` span record that cannot be read (the message says which)."""


def is_sdk_span(record: Mapping[str, Any]) -> bool:
    """Whether *record* is a span in the SDK's ``to_json`` layout."""
    return "context" in record and "start_time" in record


def _time_ns(value: object, key: str) -> int:
    """An ISO-8601 time with a UTC offset (``2025-01-01T12:00:00.123456Z``) as epoch ns."""
    if not isinstance(value, str):
        raise SdkJsonError(f"span field {key!r} must be an ISO-8601 time, got {value!r}")
    text = value[:-1] + "+00:00" if value.endswith(("Z", "z")) else value
    try:
        moment = datetime.datetime.fromisoformat(text)
    except ValueError:
        raise SdkJsonError(
            f"span field {key!r} must be an ISO-8601 time such as "
            f"'2025-01-01T12:00:00.123456Z', got {value!r}"
        ) from None
    if moment.tzinfo is None:
        raise SdkJsonError(f"span field {key!r} must say its UTC offset ('Z'), got {value!r}")
    # Whole microseconds, exactly: no float on the way.
    nanoseconds = ((moment - _EPOCH) // _MICROSECOND) * 1000
    if not 0 <= nanoseconds < _MAX_TIME_NS:
        raise SdkJsonError(
            f"span field {key!r} must be a time from 1970 to 2554 (0 to 2**64 - 1 ns since "
            f"the epoch), got {value!r}"
        )
    return nanoseconds


def _hex_id(value: object, key: str) -> str | None:
    """``0x``-prefixed hex (the SDK's) as the bare lower-case hex of the ``file`` layout."""
    if value is None:
        return None
    found = _HEX_ID.fullmatch(value) if isinstance(value, str) else None
    if found is None:
        raise SdkJsonError(f"span field {key!r} must be a 0x-prefixed hex id, got {value!r}")
    return found.group(1).lower()


def _object(value: object, key: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise SdkJsonError(f"span field {key!r} must be a JSON object, got {value!r}")
    return value


def _list(value: object, key: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise SdkJsonError(f"span field {key!r} must be a JSON array, got {value!r}")
    return value


def _context(value: object, key: str) -> tuple[str | None, str | None]:
    context = _object(value, key)
    return (
        _hex_id(context.get("trace_id"), f"{key}.trace_id"),
        _hex_id(context.get("span_id"), f"{key}.span_id"),
    )


def file_fields(record: Mapping[str, Any]) -> dict[str, Any]:
    """*record* (the SDK's ``to_json`` of a span) as the ``file`` exporter's fields.

    Raises :class:`SdkJsonError` for a field that is not what the SDK writes.
    """
    trace_id, span_id = _context(record.get("context"), "context")
    kind = record.get("kind")
    status = _object(record.get("status"), "status")
    events = []
    for event in _list(record.get("events"), "events"):
        event = _object(event, "events")
        events.append(
            {
                "name": event.get("name", ""),
                "time_unix_nano": _time_ns(event.get("timestamp"), "events.timestamp"),
                "attributes": _object(event.get("attributes"), "events.attributes"),
            }
        )
    links = []
    for link in _list(record.get("links"), "links"):
        link = _object(link, "links")
        link_trace, link_span = _context(link.get("context"), "links.context")
        links.append(
            {
                "trace_id": link_trace,
                "span_id": link_span,
                "attributes": _object(link.get("attributes"), "links.attributes"),
            }
        )
    resource = _object(record.get("resource"), "resource")
    return {
        "name": record.get("name"),
        "trace_id": trace_id,
        "span_id": span_id,
        "parent_span_id": _hex_id(record.get("parent_id"), "parent_id"),
        "kind": kind.removeprefix(_KIND_PREFIX) if isinstance(kind, str) else kind,
        "start_time_unix_nano": _time_ns(record.get("start_time"), "start_time"),
        "end_time_unix_nano": _time_ns(record.get("end_time"), "end_time"),
        "status": {
            "code": status.get("status_code", "UNSET"),
            "description": status.get("description"),
        },
        "attributes": _object(record.get("attributes"), "attributes"),
        "events": events,
        "links": links,
        "resource": _object(resource.get("attributes"), "resource.attributes"),
        "scope": None,
    }


def event_time_ns(event: Mapping[str, Any]) -> int:
    """A span event's time in epoch ns: the ``file`` exporter's ``time_unix_nano``, else
    the SDK's ISO ``timestamp`` (:class:`SdkJsonError` when it has neither)."""
    if "time_unix_nano" in event:
        return int(event["time_unix_nano"])
    return _time_ns(event.get("timestamp"), "events.timestamp")
