"""The JSON shape of one span in the ``file`` exporter's line.

The ``console`` prints it too with ``console_format="lens"``; its default is the
SDK's ``to_json`` (:mod:`nemo.lens._sdk.exporters.sdk_json`).

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

That is the line of :data:`RESOURCE_ON_EVERY_LINE`, the console's ``lens``
layout (trace format 1). The ``file`` exporter's line ends differently: its
:class:`LineLayout` (:mod:`~nemo.lens._sdk.exporters.trace_file`) writes the
resource once, in a header per process lifetime, and ends each line with the
scope and ``"lifetime": "<its id>"`` instead (``docs/trace-format.md``).

Ids are lower-case hex as in W3C ``traceparent``. Non-finite floats (a NaN
loss is common) become the strings ``"NaN"``, ``"Infinity"`` and
``"-Infinity"``, as in the OTLP/JSON mapping, so every line is strict JSON.

How it is fast
    :func:`encode_span` runs on the export thread for every span, so it
    decides how many spans per second the ``file`` exporter sustains. It
    writes the line from pieces instead of serialising :func:`span_to_dict`'s
    dict: the ``resource`` and ``scope`` objects are shared by every span of a
    provider and immutable, so each is encoded once and its text reused; the
    attributes are copied straight into one C-encoder call when they hold only
    plain values (nearly always). Any span the fast path does not cover -- a
    non-finite float, an odd value stored by a custom processor -- is encoded
    from :func:`span_to_dict` instead, so the output is the same, byte for
    byte, either way. That takes about a third of the time of serialising
    :func:`span_to_dict`'s dict (CPython 3.11; ``python -m bench`` measures it).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from opentelemetry.trace import SpanContext, format_span_id, format_trace_id

from nemo.lens import semconv
from nemo.lens._core.redaction import is_redact_key
from nemo.lens._core.sanitize import clean_text, is_clean_text, safe_str
from nemo.lens.fallbacks import DEFAULT_REDACT_KEYS

if TYPE_CHECKING:
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import ReadableSpan
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
    "plain_attributes_json",
    "plain_key_json",
    "plain_value_json",
    "plain_values_json",
    "scope_json",
    "span_to_dict",
    "tail_json",
]


def _json_value(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        if math.isnan(value):
            return "NaN"
        return "Infinity" if value > 0 else "-Infinity"
    if isinstance(value, (list, tuple)):
        return [_json_value(item) for item in value]
    if isinstance(value, (str, bool, int, float)) or value is None:
        return value
    # A mapping (the SDK stores them), bytes, or something odd a custom
    # processor stored: its text keeps the line valid JSON.
    return safe_str(value)


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


# Configured as json.dumps(..., separators=(",", ":"), ensure_ascii=False,
# allow_nan=False) configures its encoder, so both spell every value alike; built
# once because json.dumps builds a new encoder per call when given options.
_ENCODER: Final = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)
_encode = _ENCODER.encode
# What that encoder applies to a str (with ensure_ascii=False), without the
# isinstance tests of encode() in front.
_encode_str: Final = json.encoder.encode_basestring

encode_json: Final = _encode
"""Any JSON value, spelled as every line spells it (compact, UTF-8, no NaN)."""
encode_text: Final = _encode_str
"""A ``str`` as a JSON string, spelled as :data:`encode_json` spells it."""


def _make_flat_encoder() -> Callable[[dict[str, Any]], str]:
    # JSONEncoder.encode() builds a new C encoder on every call; for the small
    # flat dicts of span attributes that is most of the cost. The C encoder is
    # built once here instead, with the same settings but no circularity check,
    # which a dict of scalars and flat lists of scalars cannot need. It is a
    # private part of the json module: where it is missing, encode() it is.
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:
        return _encode
    chunks: Callable[[object, int], Sequence[str]] = make(
        None,
        _ENCODER.default,
        _encode_str,
        None,
        _ENCODER.key_separator,
        _ENCODER.item_separator,
        False,  # sort_keys
        False,  # skipkeys
        False,  # allow_nan
    )
    return lambda value: "".join(chunks(value, 0))


_encode_flat: Final = _make_flat_encoder()

# Value types the C encoder writes exactly as _json_value would have them written.
# Subclasses (an IntEnum, a str enum) take the general path: same text, no guessing.
_PLAIN: Final = frozenset({str, int, float, bool, type(None)})
_INT64_MIN: Final = -(2**63)
_INT64_MAX: Final = 2**63 - 1
_INFINITIES: Final = (math.inf, -math.inf)
_SEQUENCES: Final = frozenset({list, tuple})

# (resource, scope, the end of a line for them). Every span of a provider shares
# one resource object and one scope object per tracer, and both are immutable,
# so their text is encoded once. The objects are held so that their ids cannot
# be reused by others while an entry exists; the bound only guards against a
# program that makes tracers without end. Entries are replaced whole, so
# concurrent exporters at worst encode the same pair twice.
_TAILS: dict[tuple[int, int], tuple[object, object, str]] = {}
_TAILS_MAX: Final = 64


def scope_json(scope: InstrumentationScope | None) -> str:
    """The line's ``scope`` object (``null`` without one)."""
    if scope is None:
        return "null"
    return _encode({"name": scope.name, "version": scope.version or None})


def tail_json(resource: Resource, scope: InstrumentationScope | None) -> str:
    """The end of every line for spans of *resource* and *scope*: both objects and the ``}``."""
    key = (id(resource), id(scope))
    entry = _TAILS.get(key)
    if entry is not None and entry[0] is resource and entry[1] is scope:
        return entry[2]
    text = f'"resource":{_encode(_attributes(resource.attributes))},"scope":{scope_json(scope)}}}'
    if len(_TAILS) >= _TAILS_MAX:
        _TAILS.clear()
    _TAILS[key] = (resource, scope, text)
    return text


class LineLayout:
    """How a span's line ends, after its own fields: here, with its resource and
    scope written out (:func:`tail_json`; trace format 1, and the console's ``lens``
    lines). The ``file`` exporter's layout is a subclass
    (:class:`~nemo.lens._sdk.exporters.trace_file.LifetimeLayout`)."""

    def tail(self, resource: Resource, scope: InstrumentationScope | None) -> str:
        """The end of the line of every span of *resource* and *scope*, its ``}`` included."""
        return tail_json(resource, scope)


RESOURCE_ON_EVERY_LINE: Final = LineLayout()
"""Every line carries its resource: self-contained lines (the console's ``lens`` layout)."""


def attributes_json(attributes: Mapping[str, Any] | None) -> str:
    """The JSON object of span, event or link *attributes*, as :func:`encode_span` writes it."""
    if not attributes:
        return "{}"
    # The SDK hands out a read-only proxy of its attribute mapping; copy() goes
    # straight to the dict underneath, ten times faster than dict(proxy).
    copy = getattr(attributes, "copy", None)
    plain = copy() if copy is not None else None
    if not isinstance(plain, dict):
        plain = dict(attributes)
    for key, value in plain.items():
        kind = type(value)
        if type(key) is not str or (
            kind not in _PLAIN
            and not (kind in _SEQUENCES and all(type(item) in _PLAIN for item in value))
        ):
            return _encode(_attributes(attributes))
    try:
        return _encode_flat(plain)
    except ValueError:  # a non-finite float: _json_value spells it as a string
        return _encode(_attributes(attributes))


# Attribute keys plain_attributes_json writes as they are -- str, valid text, no
# redact key (whose text values the exporters hide) -- each with its JSON spelling
# and the colon after it; "" for a key that is not plain. Memoised per key, bounded.
_PLAIN_KEYS: dict[str, str] = {}
_PLAIN_KEYS_MAX: Final = 4096


def _plain_key(key: str) -> str:
    plain = (
        type(key) is str
        and (key.isascii() or is_clean_text(key))
        and not is_redact_key(key, DEFAULT_REDACT_KEYS)
    )
    text = _encode_str(key) + ":" if plain else ""
    if len(_PLAIN_KEYS) >= _PLAIN_KEYS_MAX:
        _PLAIN_KEYS.clear()
    _PLAIN_KEYS[key] = text
    return text


# Text values likewise (a group's tags, a model's name: the same few, span after
# span): their JSON spelling, "" for text that is not valid Unicode. Bounded.
_PLAIN_TEXT: dict[str, str] = {}


def _plain_text(value: str) -> str:
    text = _encode_str(value) if value.isascii() or is_clean_text(value) else ""
    if len(_PLAIN_TEXT) >= _PLAIN_KEYS_MAX:
        _PLAIN_TEXT.clear()
    _PLAIN_TEXT[value] = text
    return text


def plain_key_json(key: str) -> str:
    """*key* as :func:`plain_attributes_json` writes it -- its JSON text and the colon
    -- or ``""`` when it is not plain (not ``str``, not valid text, a redact key)."""
    prefix = _PLAIN_KEYS.get(key)
    return prefix if prefix is not None else _plain_key(key)


def plain_values_json(attributes: dict[str, Any], into: list[str]) -> bool:
    """Append the JSON text of each value of *attributes* to *into*, in order.

    False at the first value :func:`plain_value_json` would not write; *into*
    then holds the values before it.
    """
    append = into.append
    for value in attributes.values():
        if type(value) is int and _INT64_MIN <= value <= _INT64_MAX:
            append(f"{value!r}")  # the common value, without the call
            continue
        text = plain_value_json(value)
        if not text:
            return False
        append(text)
    return True


def plain_value_json(value: Any) -> str:
    """The JSON text of an attribute value as :func:`plain_attributes_json` writes it,
    or ``""`` for a value it does not write: a sequence, ``None``, text that is not
    valid Unicode, an int beyond 64 bits, a non-finite float, another type."""
    kind = type(value)
    if kind is str:
        text = _PLAIN_TEXT.get(value)
        return text if text is not None else _plain_text(value)
    if kind is int:
        return f"{value!r}" if _INT64_MIN <= value <= _INT64_MAX else ""
    if kind is float:
        return "" if value != value or value in _INFINITIES else f"{value!r}"
    if kind is bool:
        return "true" if value else "false"
    return ""


def plain_attributes_json(attributes: dict[str, Any]) -> str | None:
    """:func:`attributes_json` of a plain ``dict`` that needs no redaction nor cleaning.

    ``None`` when it holds anything else (a redact key, or a value
    :func:`plain_values_json` does not write): the caller then checks and
    encodes the general way. Written here rather than by the C encoder, which
    costs twice as much for the few attributes a span has; the text is the same
    (ints and floats as their ``repr``, as the ``json`` module writes them).
    """
    values: list[str] = []
    if not plain_values_json(attributes, values):
        return None
    parts = []
    for key, text in zip(attributes, values, strict=True):
        prefix = plain_key_json(key)
        if not prefix:
            return None
        parts.append(prefix + text)
    return "{" + ",".join(parts) + "}"


def int_json(value: object) -> str:
    """A time or count as :func:`encode_span` writes it."""
    return str(value) if type(value) is int else _encode(value)


def ids_json(context: SpanContext | None, parent: SpanContext | None) -> str:
    """A span line's ``"trace_id":...,"span_id":...,"parent_span_id":...`` members."""
    # f"{id:032x}" is format(id, "032x"), which is what format_trace_id returns
    # (and "016x" format_span_id).
    parent_json = "null" if parent is None else f'"{parent.span_id:016x}"'
    if context is None:
        return f'"trace_id":null,"span_id":null,"parent_span_id":{parent_json}'
    return (
        f'"trace_id":"{context.trace_id:032x}","span_id":"{context.span_id:016x}",'
        f'"parent_span_id":{parent_json}'
    )


def _fast_line(span: ReadableSpan, layout: LineLayout) -> str:
    context = span.context
    parent = span.parent
    status = span.status
    name = span.name
    description = status.description
    ids = ids_json(context, parent)
    events = span.events
    events_json = (
        ",".join(
            f'{{"name":{_encode(event.name)},"time_unix_nano":{int_json(event.timestamp)},'
            f'"attributes":{attributes_json(event.attributes)}}}'
            for event in events
        )
        if events
        else ""
    )
    links = span.links
    links_json = (
        ",".join(
            f'{{"trace_id":"{link.context.trace_id:032x}",'
            f'"span_id":"{link.context.span_id:016x}",'
            f'"attributes":{attributes_json(link.attributes)}}}'
            for link in links
        )
        if links
        else ""
    )
    return (
        f'{{"name":{_encode_str(name) if type(name) is str else _encode(name)},{ids},'
        f'"kind":"{span.kind.name}",'
        f'"start_time_unix_nano":{int_json(span.start_time)},'
        f'"end_time_unix_nano":{int_json(span.end_time)},'
        f'"status":{{"code":"{status.status_code.name}",'
        f'"description":{"null" if description is None else _encode(description)}}},'
        f'"attributes":{attributes_json(span.attributes)},'
        f'"events":[{events_json}],"links":[{links_json}],'
        f"{layout.tail(span.resource, span.instrumentation_scope)}"
    )


def _dumps(value: dict[str, Any]) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def _dict_line(span: ReadableSpan, layout: LineLayout) -> str:
    # span_to_dict's line, ended by the layout: the same text as _dumps of the whole
    # dict for RESOURCE_ON_EVERY_LINE (its tail is the encoding of the last two keys).
    fields = span_to_dict(span)
    del fields["resource"], fields["scope"]
    return f"{_dumps(fields)[:-1]},{layout.tail(span.resource, span.instrumentation_scope)}"


def encode_span(span: ReadableSpan, layout: LineLayout = RESOURCE_ON_EVERY_LINE) -> str:
    """Return *span* as one line of compact JSON (no trailing newline), ended as
    *layout* ends it.

    Never raises, and the line is always valid UTF-8 text: a span holding
    something JSON cannot carry (a name that is not a ``str``, text with lone
    surrogates, an int too long to print) is encoded from a copy made
    exportable by :func:`nemo.lens._sdk.exporters.redaction.clean_span` -- which
    nemo.lens's exporters have already applied, so there this never happens.
    """
    try:
        line = _fast_line(span, layout)
    except Exception:
        # Whatever the fast path could not handle, the plain path encodes as it
        # always has; what it cannot encode either is made exportable first.
        try:
            line = _dict_line(span, layout)
        except Exception:
            line = _encode_cleaned(span, layout)
    if line.isascii() or is_clean_text(line):
        return line
    # A lone surrogate can only sit inside a JSON string here (the structure is
    # ASCII), so replacing it keeps the line valid JSON.
    return clean_text(line)


def _encode_cleaned(span: ReadableSpan, layout: LineLayout) -> str:
    from nemo.lens._sdk.exporters.redaction import clean_span

    try:
        return _dict_line(clean_span(span, {}), layout)
    except Exception as exc:
        # Unreachable with the SDK's spans; a custom ReadableSpan whose
        # properties raise still leaves a line saying which span it was.
        context = span.context
        return _dumps(
            {
                "name": "(span could not be encoded)",
                "trace_id": format_trace_id(context.trace_id) if context is not None else None,
                "span_id": format_span_id(context.span_id) if context is not None else None,
                "attributes": {semconv.SPAN_ENCODE_ERROR: safe_str(exc)},
            }
        )
