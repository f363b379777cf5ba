"""The one encoder of a span's JSON line: the ``file`` exporter's and the console's ``lens``
line (:func:`encode_span`, a batch by :func:`span_lines`, ended as a :class:`LineLayout`
says), and the console's default, the SDK's own ``to_json`` (:func:`sdk_json_line`).
Shapes in ``docs/trace-format.md``; how it is fast in ``docs/architecture.md``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, TypeVar

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.trace import Link, SpanContext, SpanKind, format_span_id, format_trace_id

from nemo.lens import semconv
from nemo.lens._core.redaction import DEFAULT_REDACT_KEYS, is_redact_key
from nemo.lens._core.sanitize import INT64_MAX, INT64_MIN, clean_text, is_clean_text, safe_str
from nemo.lens._sdk.exporters.redaction import Changes, SpanCopy, clean_resource, clean_span
from nemo.lens._sdk.recording import UNSET_STATUS, RecordingSpan

if TYPE_CHECKING:
    from opentelemetry.sdk.util.instrumentation import InstrumentationScope

__all__ = [
    "RESOURCE_ON_EVERY_LINE",
    "LineLayout",
    "attributes_json",
    "encode_json",
    "encode_span",
    "encode_text",
    "ids_json",
    "int_json",
    "scope_json",
    "sdk_json_line",
    "span_lines",
    "span_to_dict",
]

# Configured as json.dumps(..., separators=(",", ":"), ensure_ascii=False, allow_nan=False)
# configures its encoder; built once (json.dumps builds one per call when given options).
_ENCODER: Final = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)
encode_json: Final = _ENCODER.encode
"""Any JSON value, spelled as every line spells it (compact, UTF-8, no NaN)."""
encode_text: Final = json.encoder.encode_basestring
"""A ``str`` as a JSON string, spelled as :data:`encode_json` spells it."""

_PLAIN: Final = frozenset({str, int, float, bool, type(None)})
_INTERNAL: Final = SpanKind.INTERNAL
_V = TypeVar("_V")
_UNSET_STATUS_JSON: Final = '{"code":"UNSET","description":null}'


def _make_flat_encoder() -> Callable[[dict[str, Any]], str]:
    # encode() builds a C encoder per call, most of the cost for a span's few attributes;
    # this one is built once, without the circularity check flat values cannot need.
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:
        return encode_json
    chunks: Callable[[object, int], Sequence[str]] = make(
        None, _ENCODER.default, encode_text, None, ":", ",", False, False, False
    )
    return lambda value: "".join(chunks(value, 0))


_encode_flat: Final = _make_flat_encoder()


def _json_value(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else "Infinity" if value > 0 else "-Infinity"
    if isinstance(value, (list, tuple)):
        return [_json_value(item) for item in value]
    if isinstance(value, (str, bool, int, float)) or value is None:
        return value
    return safe_str(value)  # a mapping, bytes, an odd object: its text keeps the line JSON


def _attributes(attributes: Mapping[str, Any] | None) -> dict[str, Any]:
    return {str(key): _json_value(value) for key, value in (attributes or {}).items()}


def span_to_dict(span: ReadableSpan) -> dict[str, Any]:
    """*span* as the JSON-ready dict its line (with the resource on it) encodes."""
    context, parent, scope = span.context, span.parent, span.instrumentation_scope
    return {
        "name": span.name,
        "trace_id": format_trace_id(context.trace_id) if context is not None else None,
        "span_id": format_span_id(context.span_id) if context is not None else None,
        "parent_span_id": format_span_id(parent.span_id) if parent is not None else None,
        "kind": span.kind.name,
        "start_time_unix_nano": span.start_time,
        "end_time_unix_nano": span.end_time,
        "status": {"code": span.status.status_code.name, "description": span.status.description},
        "attributes": _attributes(span.attributes),
        "events": [
            {"name": e.name, "time_unix_nano": e.timestamp, "attributes": _attributes(e.attributes)}
            for e in span.events
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
        "scope": {"name": scope.name, "version": scope.version or None} if scope else None,
    }


# Keys and text values as written without the json module ("" when not plain).
_KEYS: dict[object, str] = {}
_TEXTS: dict[str, str] = {}


def _memo(memo: dict[Any, _V], key: object, value: _V, most: int = 4096) -> _V:
    # Every memo is bounded: a program's names, keys and texts are few, its spans are not.
    if len(memo) >= most:
        memo.clear()
    memo[key] = value
    return value


def _key_json(key: object) -> str:
    # '"key":' for a key written as it is (str, valid text, not a redact key), else "".
    text = _KEYS.get(key)
    if text is None:
        plain = (
            type(key) is str and is_clean_text(key) and not is_redact_key(key, DEFAULT_REDACT_KEYS)
        )
        text = _memo(_KEYS, key, encode_text(str(key)) + ":" if plain else "")
    return text


def _value_json(value: Any) -> str:
    # A plain value's JSON, else "" (for the general path to write).
    kind = type(value)
    if kind is str:
        text = _TEXTS.get(value)
        if text is None:
            text = _memo(_TEXTS, value, encode_text(value) if is_clean_text(value) else "")
        return text
    if kind is int:
        return f"{value!r}" if INT64_MIN <= value <= INT64_MAX else ""
    if kind is float:
        return f"{value!r}" if math.isfinite(value) else ""
    if kind is bool:
        return "true" if value else "false"
    return ""


def _plain_members(attributes: Mapping[str, Any]) -> str | None:
    # The members of the attributes' JSON object, when every key and value is plain.
    parts = []
    for key, value in attributes.items():
        prefix, text = _key_json(key), _value_json(value)
        if not (prefix and text):
            return None
        parts.append(prefix + text)
    return ",".join(parts)


def attributes_json(attributes: Mapping[str, Any] | None) -> str:
    """The JSON object of span, event or link *attributes*, as every line writes it."""
    if not attributes:
        return "{}"
    # The SDK's read-only proxy copies straight from the dict underneath.
    copy = getattr(attributes, "copy", None)
    plain = copy() if copy is not None else None
    if not isinstance(plain, dict):
        plain = dict(attributes)
    for key, value in plain.items():
        if type(key) is not str or (
            type(value) not in _PLAIN
            and not (type(value) in (list, tuple) and all(type(v) in _PLAIN for v in value))
        ):
            return encode_json(_attributes(attributes))
    try:
        return _encode_flat(plain)
    except ValueError:  # a non-finite float: _json_value spells it as a string
        return encode_json(_attributes(attributes))


def scope_json(scope: InstrumentationScope | None) -> str:
    """The line's ``scope`` object (``null`` without one)."""
    return (
        "null"
        if scope is None
        else encode_json({"name": scope.name, "version": scope.version or None})
    )


def int_json(value: object) -> str:
    """A time or count as every line writes it."""
    return str(value) if type(value) is int else encode_json(value)


def ids_json(context: SpanContext | None, parent: SpanContext | None) -> str:
    """A line's ``"trace_id":...,"span_id":...,"parent_span_id":...`` members."""
    parent_json = "null" if parent is None else f'"{parent.span_id:016x}"'
    if context is None:
        return f'"trace_id":null,"span_id":null,"parent_span_id":{parent_json}'
    return (
        f'"trace_id":"{context.trace_id:032x}","span_id":"{context.span_id:016x}",'
        f'"parent_span_id":{parent_json}'
    )


class LineLayout:
    """How a span's line ends after its own fields: here, with its resource and scope written
    out (the console's ``lens`` line; the ``file``'s is a subclass). It also keeps, per
    tracer, the fixed pieces of each shape of line its spans take (see :func:`span_lines`).
    """

    def __init__(self) -> None:
        # Memos hold the objects whose ids key them, so no id is reused meanwhile.
        self._tails: dict[tuple[int, int], tuple[object, object, str]] = {}
        self._shapes: dict[int, tuple[object, dict[tuple[object, ...], Any]]] = {}

    def ending(self, resource: Resource, scope: InstrumentationScope | None) -> str:
        """The end of the line of every span of *resource* and *scope*, ``}`` included."""
        return f'"resource":{attributes_json(resource.attributes)},"scope":{scope_json(scope)}}}'

    def tail(self, resource: Resource, scope: InstrumentationScope | None) -> str:
        """:meth:`ending`, made once per resource and scope; ``""`` when either would
        first have to be made exportable."""
        key = (id(resource), id(scope))
        entry = self._tails.get(key)
        if entry is None or entry[0] is not resource or entry[1] is not scope:
            exportable = clean_resource(resource)[0] is resource and (
                scope is None or (scope.name.isascii() and (scope.version or "").isascii())
            )
            text = self.ending(resource, scope) if exportable else ""
            entry = _memo(self._tails, key, (resource, scope, text), 64)
        return entry[2]

    def shapes(self, tracer: object) -> dict[tuple[object, ...], Any]:
        """The shapes of line *tracer*'s spans take (see :func:`span_lines`)."""
        entry = self._shapes.get(id(tracer))
        if entry is None or entry[0] is not tracer:
            entry = _memo(self._shapes, id(tracer), (tracer, {}), 64)
        return entry[1]


RESOURCE_ON_EVERY_LINE: Final = LineLayout()
"""Every line carries its resource (the console's ``lens`` layout)."""


def _line(span: ReadableSpan, layout: LineLayout) -> str:
    tail = layout.tail(span.resource, span.instrumentation_scope)
    if not tail:
        raise ValueError("the resource or scope needs cleaning")
    status, name = span.status, span.name
    description = status.description
    events = ",".join(
        f'{{"name":{encode_json(e.name)},"time_unix_nano":{int_json(e.timestamp)},'
        f'"attributes":{attributes_json(e.attributes)}}}'
        for e in span.events
    )
    links = ",".join(
        f'{{"trace_id":"{link.context.trace_id:032x}","span_id":"{link.context.span_id:016x}",'
        f'"attributes":{attributes_json(link.attributes)}}}'
        for link in span.links
    )
    return (
        f'{{"name":{encode_text(name) if type(name) is str else encode_json(name)},'
        f'{ids_json(span.context, span.parent)},"kind":"{span.kind.name}",'
        f'"start_time_unix_nano":{int_json(span.start_time)},'
        f'"end_time_unix_nano":{int_json(span.end_time)},'
        f'"status":{{"code":"{status.status_code.name}",'
        f'"description":{"null" if description is None else encode_json(description)}}},'
        f'"attributes":{attributes_json(span.attributes)},'
        f'"events":[{events}],"links":[{links}],{tail}'
    )


def encode_span(span: ReadableSpan, layout: LineLayout = RESOURCE_ON_EVERY_LINE) -> str:
    """*span* as one line of compact JSON (no newline), ended as *layout* ends it. Never
    raises; the line is always valid UTF-8 text (a span holding what JSON cannot carry is
    encoded from a copy made exportable)."""
    try:
        line = _line(span, layout)
    except Exception:
        try:
            line = _line(clean_span(span, {}), layout)
        except Exception as exc:  # a custom span whose properties raise: say which it was
            context = span.context
            line = encode_json(
                {
                    "name": "(span could not be encoded)",
                    "trace_id": format_trace_id(context.trace_id) if context else None,
                    "span_id": format_span_id(context.span_id) if context else None,
                    "attributes": {semconv.SPAN_ENCODE_ERROR: safe_str(exc)},
                }
            )
    # A lone surrogate can only sit inside a JSON string: replacing it keeps the JSON.
    return line if line.isascii() or is_clean_text(line) else clean_text(line)


_COMPILE_AFTER: Final = 8  # a shape seen this often is written by a writer of its own
# A recorded span's line between its shape's start, ids, times and attributes.
_PIECES: Final = {
    "SPAN_ID": '","span_id":"',
    "PARENT": '","parent_span_id":',
    "START": ',"kind":"INTERNAL","start_time_unix_nano":',
    "END": ',"end_time_unix_nano":',
    "ATTRIBUTES": f',"status":{_UNSET_STATUS_JSON},"attributes":{{',
}


class _Shape:
    # What every recorded span of one shape (name, tags, attribute keys) writes alike.

    __slots__ = ("closing", "head", "keys", "seen", "write")

    def __init__(self, head: str, keys: tuple[str, ...], closing: str) -> None:
        self.head, self.keys, self.closing = head, keys, closing
        self.seen = 0
        self.write: Callable[[RecordingSpan, dict[str, Any] | None], str | None] = self._join

    def _join(self, span: RecordingSpan, attributes: dict[str, Any] | None) -> str | None:
        # The line from the pieces and the values; None when a value is not plain.
        members = []
        for key, value in zip(self.keys, attributes.values() if attributes else ()):  # noqa: B905
            text = _value_json(value)
            if not text:
                return None
            members.append(key + text)
        self.seen += 1
        if self.seen >= _COMPILE_AFTER:
            self.write = _compiled(self)
        pieces = _PIECES
        return "".join(
            (self.head, span._trace_id.to_bytes(16, "big").hex(), pieces["SPAN_ID"],
             span._span_id.to_bytes(8, "big").hex(), pieces["PARENT"], _parent_json(span._parent),
             pieces["START"], str(span._start_time), pieces["END"], str(span._end_time),
             pieces["ATTRIBUTES"], *members, self.closing)
        )  # fmt: skip


def _parent_json(parent: RecordingSpan | SpanContext | None) -> str:
    if parent is None:
        return "null"
    span_id = parent.span_id if isinstance(parent, SpanContext) else parent._span_id
    return f'"{span_id.to_bytes(8, "big").hex()}"'


def _compiled(shape: _Shape) -> Callable[[RecordingSpan, dict[str, Any] | None], str | None]:
    # The one exec of the export path, kept for a measured tenth of a span's cost
    # (docs/architecture.md, the encoder): a shape's line as one f-string of its values,
    # the pieces read from the writer's globals (no text of theirs is parsed as code).
    count = len(shape.keys)
    names: dict[str, Any] = {"value_json": _value_json, "parent_json": _parent_json, **_PIECES}
    names |= {"HEAD": shape.head, "CLOSING": shape.closing, "MIN": INT64_MIN, "MAX": INT64_MAX}
    body = ["def write(span, attributes):"]
    if count:
        body.append(f"    {''.join(f'v{n}, ' for n in range(count))}= attributes.values()")
    for n, key in enumerate(shape.keys):
        names[f"K{n}"] = key
        body.append(
            f"    t{n} = f'{{v{n}!r}}' if type(v{n}) is int and MIN <= v{n} <= MAX"
            f" else value_json(v{n})\n    if not t{n}: return None"
        )
    members = "".join(f"{{K{n}}}{{t{n}}}" for n in range(count))
    body.append(
        '    return f\'{HEAD}{span._trace_id.to_bytes(16, "big").hex()}{SPAN_ID}'
        '{span._span_id.to_bytes(8, "big").hex()}{PARENT}'
        '{"null" if span._parent is None else parent_json(span._parent)}'
        f"{{START}}{{span._start_time}}{{END}}{{span._end_time}}{{ATTRIBUTES}}{members}{{CLOSING}}'"
    )
    exec(compile("\n".join(body) + "\n", "<nemo.lens line writer>", "exec"), names)
    writer: Callable[[RecordingSpan, dict[str, Any] | None], str | None] = names["write"]
    return writer


def _shape(span: RecordingSpan, tail: str) -> _Shape | None:
    # None when spans of this shape take the general path.
    name, attributes, tags = span._name, span._attributes or {}, span._tags or {}
    tags_members = _plain_members(tags)
    if type(name) is not str or not is_clean_text(name) or tags_members is None:
        return None
    if not attributes.keys().isdisjoint(tags):
        return None  # a key in both: the tag's value in the key's place (the general path)
    keys = [_key_json(key) for key in attributes]
    if not all(keys):
        return None
    keys[1:] = ["," + key for key in keys[1:]]
    comma = "," if keys and tags_members else ""
    return _Shape(
        f'{{"name":{encode_text(name)},"trace_id":"',
        tuple(keys),
        f'{comma}{tags_members}}},"events":[],"links":[],{tail}',
    )


def span_lines(
    spans: Sequence[ReadableSpan | RecordingSpan], layout: LineLayout, changes: Changes
) -> list[str]:
    """Each span redacted, made exportable (what changed counted in *changes*) and encoded
    as :func:`encode_span` would encode the SDK's span it stands for. A recorded span of a
    common shape (name, tags and keys plain; no events, links or status) is written from
    its shape's pieces and its values."""
    lines: list[str] = []
    tracer: object = None
    shapes: dict[tuple[object, ...], Any] = {}
    tail = ""
    for span in spans:
        line = None
        if isinstance(span, RecordingSpan):
            if (
                span._kind is _INTERNAL
                and span._status is UNSET_STATUS
                and not span._events
                and not span._links
                and type(span._start_time) is int
                and type(span._end_time) is int
            ):
                if span._tracer is not tracer:  # a batch's spans share one, nearly always
                    tracer = span._tracer
                    shapes = layout.shapes(tracer)
                    tail = layout.tail(span._tracer.resource, span._tracer.instrumentation_scope)
                attributes, tags = span._attributes, span._tags
                # The tags object is held by its shape's entry, so its id stands for it.
                key = (span._name, id(tags), *attributes) if attributes else (span._name, id(tags))
                entry = shapes.get(key)
                if entry is None:
                    entry = _memo(shapes, key, (tags, _shape(span, tail) if tail else None), 1024)
                shape = entry[1]
                if shape is not None:
                    try:
                        line = shape.write(span, attributes)
                    except Exception:  # what this could not write, the general path writes
                        line = None
            if line is None:
                line = encode_span(clean_span(span.readable(), changes), layout)
        else:
            line = encode_span(clean_span(span, changes), layout)
        lines.append(line)
    return lines


def _is_native(value: Any) -> bool:
    # Whether json.dumps writes the value as strict JSON, as it is.
    kind = type(value)
    if kind is float:
        return math.isfinite(value)
    if kind in _PLAIN:
        return True
    if kind is tuple or kind is list:
        return all(_is_native(item) for item in value)
    if kind is dict:  # another mapping (a read-only view) json.dumps refuses
        return all(type(key) is str and _is_native(item) for key, item in value.items())
    return False


def _native(value: Any) -> Any:
    # The value as strict JSON holds it: what is not, written as the lens line writes it.
    if isinstance(value, float):
        return float(value) if math.isfinite(value) else _json_value(value)
    if type(value) in _PLAIN:
        return value
    if isinstance(value, (list, tuple)):
        return [_native(item) for item in value]
    if isinstance(value, Mapping):
        return {str(key): _native(item) for key, item in value.items()}
    if isinstance(value, (str, int)):  # a subclass (an enum): its plain value
        return str(value) if isinstance(value, str) else int(value)
    return safe_str(value)


def _strict(attributes: Mapping[str, Any] | None) -> dict[str, Any] | None:
    # The attributes made strict JSON, or None when they already are.
    if not attributes or all(_is_native(value) for value in attributes.values()):
        return None
    return {key: _native(value) for key, value in attributes.items()}


def sdk_json_line(span: ReadableSpan) -> str:
    """*span* as ``span.to_json(indent=None)`` writes it: one line, always strict JSON (a
    non-finite float, ``bytes`` or another object written as the lens line writes it)."""
    attributes, resource = _strict(span.attributes), _strict(span.resource.attributes)
    events = [(e, _strict(e.attributes)) for e in span.events]
    links = [(link, _strict(link.attributes)) for link in span.links]
    if (
        attributes is not None
        or resource is not None
        or any(fixed is not None for _, fixed in [*events, *links])
    ):
        span = SpanCopy(
            span,
            resource=span.resource
            if resource is None
            else Resource(resource, span.resource.schema_url),
            attributes=span.attributes if attributes is None else attributes,
            events=[
                e if fixed is None else Event(e.name, fixed, e.timestamp) for e, fixed in events
            ],
            links=[link if fixed is None else Link(link.context, fixed) for link, fixed in links],
        )
    line: str = span.to_json(indent=None)
    return line
