"""The ``file`` exporter's JSON line of a recorded span (also the ``console``'s with
``console_format="lens"``), from its fields.

:func:`recorded_line` writes the line :func:`~nemo.lens._sdk.exporters.encoding.encode_span`
would write for the span's ``ReadableSpan`` form, on the export thread, without
building that form: the text is the same, byte for byte. It reads the span's
slots (:class:`~nemo.lens._sdk.recorded_span.RecordingSpan`) directly -- this
module is that span's encoder, kept apart for size.

:func:`recorded_lines` writes a whole batch. Spans of a hot loop share their
shape -- name, group tags, attribute keys, no events, links or status -- so it
keeps each shape's line as its fixed pieces (made once per tracer and shape,
the tags among them) and fills in the ids, times and values: one ``str.join``
a span, with no pass over the fixed text. A ``%`` template would read all of
it, character by character: more than the rest of the line's work put together.
A shape seen often gets a writer compiled for it (one f-string of the same
pieces and values, without a list to fill and copy per span).

A line ends as the exporter's :class:`~nemo.lens._sdk.exporters.encoding.LineLayout`
ends it (the resource written out, or the ``file`` exporter's reference to its
lifetime): the tracer keeps each layout's tail and shapes apart.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Final

from opentelemetry.trace import SpanContext, SpanKind
from opentelemetry.trace.status import StatusCode

from nemo.lens._core.sanitize import is_clean_text
from nemo.lens._sdk.exporters.encoding import (
    RESOURCE_ON_EVERY_LINE,
    LineLayout,
    attributes_json,
    encode_json,
    encode_text,
    int_json,
    plain_attributes_json,
    plain_key_json,
    plain_value_json,
    plain_values_json,
)
from nemo.lens._sdk.exporters.redaction import clean_attributes

if TYPE_CHECKING:
    from nemo.lens._sdk.recorded_span import RecordingSpan

__all__ = ["recorded_line", "recorded_lines"]

_UNSET_STATUS_JSON: Final = '{"code":"UNSET","description":null}'
_INTERNAL: Final = SpanKind.INTERNAL
_SHAPES_MAX: Final = 1024  # line shapes kept per tracer (span names are few; this bounds the rest)
# Lines of a shape joined from its pieces before a writer is compiled for it, so that a
# shape seen a few times (a span name with an id in it) never costs a compilation.
_WRITER_AFTER: Final = 8

# A shape's compiled writer: (span, start, end, attributes, parent) -> its line, or None.
LineWriter = Callable[[Any, int, int, Any, Any], "str | None"]


def recorded_line(span: RecordingSpan, layout: LineLayout = RESOURCE_ON_EVERY_LINE) -> str | None:
    """The finished span as the line ``encode_span`` writes for its :meth:`readable` form
    (with the same *layout*).

    Written straight from the recorded fields. Ids are valid (within 128 and
    64 bits: this tracer's, or a valid parent's), so ``to_bytes(...).hex()``
    spells them as ``format_trace_id`` does, in half the time. ``None`` when a name, key or
    value would first have to be redacted or made exportable
    (:func:`~nemo.lens._sdk.exporters.redaction.clean_span` would change
    the span): the exporter then takes that general path.
    """
    tracer = span._tracer
    tail = tracer.json_tail(layout)
    if not tail:
        return None  # the resource or scope needs cleaning
    name = span._name
    if type(name) is not str or not (name.isascii() or is_clean_text(name)):
        return None
    attributes = span.attributes_dict()
    if not attributes:
        attributes_text = "{}"
    else:
        attributes_text = plain_attributes_json(attributes)  # type: ignore[assignment]
        if attributes_text is None:
            if clean_attributes(attributes, {}) is not None:
                return None
            attributes_text = attributes_json(attributes)
    status = span._status
    if status.status_code is StatusCode.UNSET:
        status_text = _UNSET_STATUS_JSON
    else:
        description = status.description
        if description is None:
            description_text = "null"
        elif is_clean_text(description):
            description_text = encode_json(description)
        else:
            return None
        status_text = f'{{"code":"{status.status_code.name}","description":{description_text}}}'
    events_text = "" if not span._events else _events_json(span)
    if events_text is None:
        return None
    links_text = "" if not span._links else _links_json(span)
    if links_text is None:
        return None
    parent = span._parent
    parent_text = "null" if parent is None else _parent_json(parent)
    kind = span._kind
    start, end = span._start_time, span._end_time
    return (
        f'{{"name":{encode_text(name)},'
        f'"trace_id":"{span._trace_id.to_bytes(16, "big").hex()}",'
        f'"span_id":"{span._span_id.to_bytes(8, "big").hex()}",'
        f'"parent_span_id":{parent_text},'
        f'"kind":"{"INTERNAL" if kind is _INTERNAL else kind.name}",'
        f'"start_time_unix_nano":{start if type(start) is int else int_json(start)},'
        f'"end_time_unix_nano":{end if type(end) is int else int_json(end)},'
        f'"status":{status_text},"attributes":{attributes_text},'
        f'"events":[{events_text}],"links":[{links_text}],{tail}'
    )


def _parent_json(parent: RecordingSpan | SpanContext) -> str:
    # The parent's span id, quoted: a RecordingSpan's, or a SpanContext's (another tracer's).
    span_id = parent.span_id if isinstance(parent, SpanContext) else parent._span_id
    return f'"{span_id.to_bytes(8, "big").hex()}"'


def _events_json(span: RecordingSpan) -> str | None:
    parts = []
    for event in span._events or ():
        name = event.name
        attributes = event.attributes
        if (
            type(name) is not str
            or not (name.isascii() or is_clean_text(name))
            or (attributes and clean_attributes(attributes, {}) is not None)
        ):
            return None
        parts.append(
            f'{{"name":{encode_json(name)},'
            f'"time_unix_nano":{int_json(event.timestamp)},'
            f'"attributes":{attributes_json(attributes)}}}'
        )
    return ",".join(parts)


def _links_json(span: RecordingSpan) -> str | None:
    parts = []
    for link in span._links or ():
        attributes = link.attributes
        if attributes and clean_attributes(attributes, {}) is not None:
            return None
        context = link.context
        parts.append(
            f'{{"trace_id":"{context.trace_id:032x}",'
            f'"span_id":"{context.span_id:016x}",'
            f'"attributes":{attributes_json(attributes)}}}'
        )
    return ",".join(parts)


def recorded_lines(
    spans: Sequence[Any],
    general: Callable[[Any], str],
    recorded: type[RecordingSpan],
    layout: LineLayout = RESOURCE_ON_EVERY_LINE,
) -> list[str]:
    """The JSON line of each span of a batch, in order, ended as *layout* ends them
    (see the module docstring).

    A span of type *recorded* whose shape has fixed pieces is written from
    them: the same text :func:`recorded_line` writes. Every other span -- of
    another type, of another kind, with events, links or a status, with a name,
    key or value that needs more than that -- is written by *general*.
    """
    unset = recorded._status  # the class default: the status of a span that set none
    lines: list[str] = []
    append = lines.append
    tracer: Any = None
    shapes: dict[tuple[object, ...], list[Any]] = {}
    for span in spans:
        line = None
        try:
            attributes, tags = span._attributes, span._tags
            start, end = span._start_time, span._end_time
            if (
                type(span) is recorded
                and span._kind is _INTERNAL
                and span._status is unset
                and not span._events
                and not span._links
                and type(start) is int
                and type(end) is int
            ):
                if span._tracer is not tracer:  # (a batch's spans share one, nearly always)
                    tracer = span._tracer
                    shapes = tracer.line_shapes(layout)
                # The tags object is held by its entry, so its id stands for it.
                key = (span._name, id(tags), *attributes) if attributes else (span._name, id(tags))
                shape = shapes.get(key)
                if shape is None:
                    if len(shapes) >= _SHAPES_MAX:
                        shapes.clear()
                    shape = shapes[key] = [tags, _line_parts(span, layout), None, 0]
                writer = shape[2]
                if writer is not None:
                    line = writer(span, start, end, attributes, span._parent)
                elif (parts := shape[1]) is not None:
                    parent = span._parent
                    values = [
                        span._trace_id.to_bytes(16, "big").hex(),
                        span._span_id.to_bytes(8, "big").hex(),
                        "null" if parent is None else _parent_json(parent),
                        f"{start}",
                        f"{end}",
                    ]
                    if not attributes or plain_values_json(attributes, values):
                        parts = parts.copy()
                        parts[1::2] = values
                        line = "".join(parts)
                    shape[3] += 1
                    if shape[3] >= _WRITER_AFTER:  # ">=": two export threads may count past it
                        shape[2] = _shape_writer(shape[1], len(attributes) if attributes else 0)
        except Exception:  # whatever this could not write, the general path writes
            line = None
        append(line if line is not None else general(span))
    return lines


def _line_parts(span: RecordingSpan, layout: LineLayout) -> list[str] | None:
    # The fixed pieces of the line of a span of this shape, with "" where the
    # trace id, span id, parent, start, end and each attribute value go (every
    # odd index); None when the shape needs the general path.
    tail = span._tracer.json_tail(layout)
    name = span._name
    if not tail or type(name) is not str or not (name.isascii() or is_clean_text(name)):
        return None
    parts = [
        f'{{"name":{encode_text(name)},"trace_id":"',
        "",
        '","span_id":"',
        "",
        '","parent_span_id":',
        "",
        ',"kind":"INTERNAL","start_time_unix_nano":',
        "",
        ',"end_time_unix_nano":',
        "",
    ]
    opening = f',"status":{_UNSET_STATUS_JSON},"attributes":{{'
    attributes = span._attributes or {}
    for key in attributes:
        prefix = plain_key_json(key)
        if not prefix:
            return None
        parts += (opening + prefix, "")
        opening = ","
    # The group's tags the span keeps apart (RecordingSpan._tags) are fixed text, after
    # the attributes as the merged dict has them (a key in both: the general path).
    tags = span._tags or {}
    tags_json = plain_attributes_json(dict(tags))
    if tags_json is None or not attributes.keys().isdisjoint(tags):
        return None
    tags_text = tags_json[1:-1]  # the members, without the braces
    if opening == ",":  # after an attribute's value
        closing = f",{tags_text}}}" if tags_text else "}"
    else:  # no attribute of its own: the object opens here
        closing = f"{opening}{tags_text}}}"
    parts.append(f'{closing},"events":[],"links":[],{tail}')
    return parts


# A shape's fields between its fixed pieces, in order: the ids, the parent, the times.
_FIELDS: Final = (
    "{span._trace_id.to_bytes(16, 'big').hex()}",
    "{span._span_id.to_bytes(8, 'big').hex()}",
    "{'null' if parent is None else parent_json(parent)}",
    "{start}",
    "{end}",
)


def _shape_writer(parts: list[str], count: int) -> LineWriter:
    # The line of a span of this shape as one f-string of its fixed pieces (read from the
    # function's globals: no text of theirs is ever parsed as code) with the fields and
    # the *count* attribute values between them, each value checked as plain_value_json
    # checks it (None: a value the general path writes). The same text as the pieces
    # joined by recorded_lines, with no list to fill and copy.
    namespace: dict[str, Any] = {
        "INT64_MIN": -(2**63),
        "INT64_MAX": 2**63 - 1,
        "parent_json": _parent_json,
        "value_json": plain_value_json,
    }
    fields = [*_FIELDS, *(f"{{t{index}}}" for index in range(count))]
    body = ["def write(span, start, end, attributes, parent):"]
    if count:
        body.append(f"    {''.join(f'v{index}, ' for index in range(count))}= attributes.values()")
    for index in range(count):
        body += [
            f"    if type(v{index}) is int and INT64_MIN <= v{index} <= INT64_MAX:",
            f"        t{index} = f'{{v{index}!r}}'",
            "    else:",
            f"        t{index} = value_json(v{index})",
            f"        if not t{index}:",
            "            return None",
        ]
    text = []
    for index, piece in enumerate(parts[0::2]):
        namespace[f"p{index}"] = piece
        text.append(f"{{p{index}}}{fields[index] if index < len(fields) else ''}")
    body.append(f'    return f"{"".join(text)}"')
    # Not registered with linecache (unlike trace_fn's wrappers, which user code runs
    # through): nothing it raises leaves recorded_lines, and shapes come and go.
    exec(compile("\n".join(body) + "\n", "<nemo.lens line writer>", "exec"), namespace)
    writer: LineWriter = namespace["write"]
    return writer
