"""The ``console`` exporter's default span line: the SDK's own ``ReadableSpan.to_json``.

Upstream v0.2.0's console printed ``span.to_json(indent=None)``, one compact
object per line, and log pipelines parse that layout::

    {"name": "train.step",
     "context": {"trace_id": "0x<32 hex>", "span_id": "0x<16 hex>", "trace_state": "[]"},
     "kind": "SpanKind.INTERNAL", "parent_id": "0x<16 hex>" | null,
     "start_time": "2025-01-01T12:00:00.123456Z", "end_time": "...",
     "status": {"status_code": "UNSET" | "OK" | "ERROR", "description": "..."},
     "attributes": {...},
     "events": [{"name": ..., "timestamp": "...", "attributes": {...}}],
     "links": [{"context": {...}, "attributes": {...}}],
     "resource": {"attributes": {...}, "schema_url": ""}}

The line is the SDK's, byte for byte, with one exception that keeps it strict
JSON (a log pipeline refuses Python's ``NaN``, and the SDK's encoder stops at
``bytes``): a value JSON cannot hold is written as the ``file`` exporter writes
it -- a non-finite float as ``"NaN"``, ``"Infinity"`` or ``"-Infinity"`` (as
OTLP/JSON does), ``bytes`` or another object as its text. The span reaching
here is already redacted and made exportable
(:mod:`~nemo.lens._sdk.exporters.redaction`); a span nemo.lens's primitives
recorded arrives as the SDK's ``ReadableSpan`` it stands for.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Final

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.trace import Link

from nemo.lens._core.sanitize import safe_str

__all__ = ["sdk_span_json"]

_NATIVE: Final = frozenset({str, int, bool, type(None)})


def _is_native(value: Any) -> bool:
    """Whether json.dumps writes *value* as strict JSON, as it is."""
    kind = type(value)
    if kind in _NATIVE:
        return True
    if kind is float:
        return math.isfinite(value)
    if kind is tuple or kind is list:
        return all(_is_native(item) for item in value)
    if kind is dict:  # another mapping (a read-only view) json.dumps refuses
        return all(type(key) is str and _is_native(item) for key, item in value.items())
    return False


def _native(value: Any) -> Any:
    """*value* as strict JSON can hold it (see the module docstring)."""
    kind = type(value)
    if kind in _NATIVE:
        return value
    if kind is float or isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return float(value)
    if isinstance(value, (list, tuple)):
        return [_native(item) for item in value]
    if isinstance(value, Mapping):
        return {str(key): _native(item) for key, item in value.items()}
    if isinstance(value, (str, int)):  # a subclass (an enum): its plain value
        return str(value) if isinstance(value, str) else int(value)
    return safe_str(value)


def _fixed(attributes: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """*attributes* made strict JSON, or ``None`` when they already are."""
    if not attributes or all(_is_native(value) for value in attributes.values()):
        return None
    return {key: _native(value) for key, value in attributes.items()}


def _strict(span: ReadableSpan) -> ReadableSpan:
    """*span*, or a copy whose values strict JSON can hold (see the module docstring)."""
    attributes = _fixed(span.attributes)
    events: list[Event] | None = None
    for index, event in enumerate(span.events):
        fixed = _fixed(event.attributes)
        if fixed is not None:
            events = list(span.events) if events is None else events
            events[index] = Event(event.name, fixed, event.timestamp)
    links: list[Link] | None = None
    for index, link in enumerate(span.links):
        fixed = _fixed(link.attributes)
        if fixed is not None:
            links = list(span.links) if links is None else links
            links[index] = Link(link.context, fixed)
    resource_attributes = _fixed(span.resource.attributes)
    if attributes is None and events is None and links is None and resource_attributes is None:
        return span
    return ReadableSpan(
        name=span.name,
        context=span.context,
        parent=span.parent,
        resource=(
            span.resource
            if resource_attributes is None
            else Resource(resource_attributes, span.resource.schema_url)
        ),
        attributes=span.attributes if attributes is None else attributes,
        events=span.events if events is None else events,
        links=span.links if links is None else links,
        kind=span.kind,
        status=span.status,
        start_time=span.start_time,
        end_time=span.end_time,
        instrumentation_scope=span.instrumentation_scope,
    )


def sdk_span_json(span: ReadableSpan) -> str:
    """*span* as ``span.to_json(indent=None)`` writes it: one line, always strict JSON."""
    line: str = _strict(span).to_json(indent=None)
    return line
