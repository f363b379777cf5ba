"""The JSON shape of one span, shared by the ``console`` and ``file`` exporters.

One span becomes one JSON object (written on one line)::

    {"name": "train.step",
     "trace_id": "<32 hex>", "span_id": "<16 hex>", "parent_span_id": "<16 hex>" | null,
     "kind": "INTERNAL",
     "start_time_unix_nano": 1700000000000000000, "end_time_unix_nano": ...,
     "status": {"code": "UNSET" | "OK" | "ERROR", "description": null | "..."},
     "attributes": {...},
     "events": [{"name": ..., "time_unix_nano": ..., "attributes": {...}}],
     "links": [{"trace_id": ..., "span_id": ..., "attributes": {...}}],
     "resource": {...},
     "scope": {"name": "nemo.lens", "version": "..."} | null}

Ids are lower-case hex as in W3C ``traceparent``. Non-finite floats (a NaN
loss is common) become the strings ``"NaN"``, ``"Infinity"`` and
``"-Infinity"``, as in the OTLP/JSON mapping, so every line is strict JSON.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from opentelemetry.trace import format_span_id, format_trace_id

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan

__all__ = ["encode_span", "span_to_dict"]


def _json_value(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        if math.isnan(value):
            return "NaN"
        return "Infinity" if value > 0 else "-Infinity"
    if isinstance(value, (list, tuple)):
        return [_json_value(item) for item in value]
    if isinstance(value, (str, bool, int, float)) or value is None:
        return value
    # Attributes are validated by the SDK, so this is only reached through a
    # custom processor that stored something odd; keep the line valid JSON.
    return str(value)


def _attributes(attributes: Mapping[str, Any] | None) -> dict[str, Any]:
    if not attributes:
        return {}
    return {str(key): _json_value(value) for key, value in attributes.items()}


def span_to_dict(span: ReadableSpan) -> dict[str, Any]:
    """Return the JSON-ready dict for *span* (see the module docstring for the shape)."""
    context = span.context
    parent = span.parent
    scope = span.instrumentation_scope
    return {
        "name": span.name,
        "trace_id": format_trace_id(context.trace_id) if context is not None else None,
        "span_id": format_span_id(context.span_id) if context is not None else None,
        "parent_span_id": format_span_id(parent.span_id) if parent is not None else None,
        "kind": span.kind.name,
        "start_time_unix_nano": span.start_time,
        "end_time_unix_nano": span.end_time,
        "status": {
            "code": span.status.status_code.name,
            "description": span.status.description,
        },
        "attributes": _attributes(span.attributes),
        "events": [
            {
                "name": event.name,
                "time_unix_nano": event.timestamp,
                "attributes": _attributes(event.attributes),
            }
            for event in span.events
        ],
        "links": [
            {
                "trace_id": format_trace_id(link.context.trace_id),
                "span_id": format_span_id(link.context.span_id),
                "attributes": _attributes(link.attributes),
            }
            for link in span.links
        ],
        "resource": _attributes(span.resource.attributes),
        "scope": (
            {"name": scope.name, "version": scope.version or None} if scope is not None else None
        ),
    }


def encode_span(span: ReadableSpan) -> str:
    """Return *span* as one line of compact JSON (no trailing newline)."""
    return json.dumps(
        span_to_dict(span), separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )
