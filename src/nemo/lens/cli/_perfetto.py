"""A trace in Perfetto's protobuf format, which ui.perfetto.dev opens natively: a process track
per rank with a lifetimes track and a track per span group (more where its spans overlap
without nesting), spans as slices with their attributes as debug annotations, written packet by
packet as the engine gives the spans (docs/perfetto.md)."""

from __future__ import annotations

import json
import struct
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, BinaryIO, Final

from nemo.lens.cli._chrome import (
    ChromeTrace,
    Layout,
    Row,
    ordered_spans,
    release_spans,
    span_args,
    take_spans,
)
from nemo.lens.cli._common import Process
from nemo.lens.cli._engine import query
from nemo.lens.cli._progress import progress

if TYPE_CHECKING:
    from nemo.lens.cli._engine import Engine

__all__ = ["write_perfetto_trace"]

# Field keys (field number << 3 | wire type) of perfetto/trace/trace.proto and the messages
# under it, as Perfetto publishes them.
_PACKET: Final = b"\x0a"  # Trace.packet = 1
_TIMESTAMP: Final = b"\x40"  # TracePacket.timestamp = 8
_SEQUENCE: Final = b"\x50\x01"  # TracePacket.trusted_packet_sequence_id = 10: ours is 1
_TRACK_EVENT: Final = b"\x5a"  # TracePacket.track_event = 11
_INTERNED: Final = b"\x62"  # TracePacket.interned_data = 12
_CLEARED: Final = b"\x68\x01"  # TracePacket.sequence_flags = 13: SEQ_INCREMENTAL_STATE_CLEARED
_NEEDS_STATE: Final = b"\x68\x02"  # ...: SEQ_NEEDS_INCREMENTAL_STATE
_TRACK_DESCRIPTOR: Final = b"\xe2\x03"  # TracePacket.track_descriptor = 60
_UUID: Final = b"\x08"  # TrackDescriptor.uuid = 1
_TRACK_NAME: Final = b"\x12"  # TrackDescriptor.name = 2
_PROCESS: Final = b"\x1a"  # TrackDescriptor.process = 3
_PARENT: Final = b"\x28"  # TrackDescriptor.parent_uuid = 5
_EXPLICIT_ORDER: Final = b"\x58\x03"  # TrackDescriptor.child_ordering = 11: EXPLICIT
_SIBLING_RANK: Final = b"\x60"  # TrackDescriptor.sibling_order_rank = 12
_PID: Final = b"\x08"  # ProcessDescriptor.pid = 1
_PROCESS_NAME: Final = b"\x32"  # ProcessDescriptor.process_name = 6
_CATEGORY_IID: Final = b"\x18"  # TrackEvent.category_iids = 3
_ANNOTATION: Final = b"\x22"  # TrackEvent.debug_annotations = 4
_BEGIN: Final = b"\x48\x01"  # TrackEvent.type = 9: TYPE_SLICE_BEGIN
_END: Final = b"\x48\x02"  # ...: TYPE_SLICE_END
_INSTANT: Final = b"\x48\x03"  # ...: TYPE_INSTANT
_NAME_IID: Final = b"\x50"  # TrackEvent.name_iid = 10
_TRACK_UUID: Final = b"\x58"  # TrackEvent.track_uuid = 11
_EVENT_NAME: Final = b"\xba\x01"  # TrackEvent.name = 23
_A_NAME_IID: Final = b"\x08"  # DebugAnnotation.name_iid = 1
_A_BOOL: Final = b"\x10"  # DebugAnnotation.bool_value = 2
_A_INT: Final = b"\x20"  # DebugAnnotation.int_value = 4
_A_DOUBLE: Final = b"\x29"  # DebugAnnotation.double_value = 5 (fixed64)
_A_STRING: Final = b"\x32"  # DebugAnnotation.string_value = 6
_A_STRING_IID: Final = b"\x88\x01"  # DebugAnnotation.string_value_iid = 17
_A_JSON: Final = b"\x4a"  # DebugAnnotation.legacy_json_value = 9
_A_NAME: Final = b"\x52"  # DebugAnnotation.name = 10
_A_DICT: Final = b"\x5a"  # DebugAnnotation.dict_entries = 11
_A_ARRAY: Final = b"\x62"  # DebugAnnotation.array_values = 12
_I_CATEGORIES: Final = b"\x0a"  # InternedData.event_categories = 1
_I_NAMES: Final = b"\x12"  # InternedData.event_names = 2
_I_ANNOTATION_NAMES: Final = b"\x1a"  # InternedData.debug_annotation_names = 3
_I_STRINGS: Final = b"\xea\x01"  # InternedData.debug_annotation_string_values = 29
_IID: Final = b"\x08"  # EventCategory/EventName/DebugAnnotationName/InternedString.iid = 1
_INTERNED_NAME: Final = b"\x12"  # ....name (InternedString.str) = 2

_INTERN_CAP: Final = 1 << 16
"""Names interned per kind at most: past that (span names made unique per span, say) a name
goes inline, so the table stays bounded."""
_FLUSH: Final = 1 << 20
"""Bytes gathered before a write to the stream."""
_LANES: Final = 1 << 12
"""Sibling ranks a group's lanes get: group order * this + lane (sibling_order_rank is int32)."""
_INT64: Final = 1 << 63
_LIFETIMES: Final = "(lifetimes)"
"""The lifetimes track's name and category, in parentheses as `(none)` is: no span group's."""
_UNIQUE: Final = frozenset({"span.id", "span.parent_id"})
"""Annotations whose values (nearly) never repeat: inline, never interned."""
_INTERNED_LENGTH: Final = 64
"""String values up to this long are interned (trace ids, attribute values that repeat)."""


def _encode_varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


_SMALL: Final = [_encode_varint(value) for value in range(1 << 14)]
"""Every varint of up to two bytes (lengths, iids, track uuids), encoded once."""


def _varint(value: int) -> bytes:
    if value < 16384:
        return _SMALL[value]
    if 1 << 56 <= value < 1 << 63:  # a Unix time in ns: nine bytes, without a loop
        return bytes(
            (
                value & 0x7F | 0x80,
                value >> 7 & 0x7F | 0x80,
                value >> 14 & 0x7F | 0x80,
                value >> 21 & 0x7F | 0x80,
                value >> 28 & 0x7F | 0x80,
                value >> 35 & 0x7F | 0x80,
                value >> 42 & 0x7F | 0x80,
                value >> 49 & 0x7F | 0x80,
                value >> 56,
            )
        )
    return _encode_varint(value)


def _field(key: bytes, payload: bytes) -> bytes:
    """A length-delimited field: a string, bytes or an embedded message."""
    return key + _varint(len(payload)) + payload


def _text(key: bytes, text: str) -> bytes:
    return _field(key, text.encode("utf-8", "surrogatepass"))


class _Interned:
    """One kind of interned name: the field that refers to each (*ref*, then its iid),
    encoded once, and the entries not yet written (*key*, InternedData's field)."""

    def __init__(self, key: bytes, ref: bytes) -> None:
        self.key = key
        self.ref = ref
        self.refs: dict[str, bytes] = {}
        self.fresh: list[bytes] = []

    def __call__(self, name: str) -> bytes | None:
        """The field referring to *name* (its entry goes with the next packet when new);
        None past the cap."""
        found = self.refs.get(name)
        if found is None:
            if len(self.refs) >= _INTERN_CAP:
                return None
            iid = _varint(len(self.refs) + 1)
            found = self.refs[name] = self.ref + iid
            self.fresh.append(_field(self.key, _IID + iid + _text(_INTERNED_NAME, name)))
        return found


@dataclass
class _Tracks:
    """One process's track and its children, with the slices still open on them."""

    uuid: int
    layout: Layout = field(default_factory=Layout)
    uuids: dict[tuple[str, int], int] = field(default_factory=dict)
    order: dict[str, int] = field(default_factory=dict)


class _Writer:
    """The packets of one trace on one sequence, gathered into large writes."""

    def __init__(self, stream: BinaryIO) -> None:
        self.stream = stream
        self.parts: list[bytes] = []
        self.size = 0
        self.next_uuid = 1
        self.tracks = 0
        self.categories = _Interned(_I_CATEGORIES, _CATEGORY_IID)
        self.names = _Interned(_I_NAMES, _NAME_IID)
        self.annotation_names = _Interned(_I_ANNOTATION_NAMES, _A_NAME_IID)
        self.strings = _Interned(_I_STRINGS, _A_STRING_IID)
        self.interned = (self.categories, self.names, self.annotation_names, self.strings)
        # The first packet resets the sequence's interning state; the rest depend on it.
        self.flags = _CLEARED

    def packet(self, body: bytes) -> None:
        if any(kind.fresh for kind in self.interned):
            interned = []
            for kind in self.interned:
                interned += kind.fresh
                kind.fresh.clear()
            body += _field(_INTERNED, b"".join(interned))
        data = _field(_PACKET, body + _SEQUENCE + self.flags)
        self.flags = _NEEDS_STATE
        self.parts.append(data)
        self.size += len(data)
        if self.size >= _FLUSH:
            self.flush()

    def flush(self) -> None:
        self.stream.write(b"".join(self.parts))
        self.parts.clear()
        self.size = 0

    def uuid(self) -> int:
        self.next_uuid += 1
        return self.next_uuid - 1

    def process(self, pid: int, name: str) -> _Tracks:
        tracks = _Tracks(self.uuid())
        process = _PID + _varint(pid) + _text(_PROCESS_NAME, name)
        self.packet(
            _field(
                _TRACK_DESCRIPTOR,
                _UUID + _varint(tracks.uuid) + _field(_PROCESS, process) + _EXPLICIT_ORDER,
            )
        )
        return tracks

    def track_of(self, tracks: _Tracks, row: Row) -> int:
        """The uuid of *row*'s track, described the first time it is used."""
        key = (row.group, row.lane)
        uuid = tracks.uuids.get(key)
        if uuid is None:
            uuid = tracks.uuids[key] = self.uuid()
            order = tracks.order.setdefault(row.group, len(tracks.order))
            rank = min(order, (1 << 31) // _LANES - 1) * _LANES + min(row.lane, _LANES - 1)
            self.packet(
                _field(
                    _TRACK_DESCRIPTOR,
                    _UUID
                    + _varint(uuid)
                    + _PARENT
                    + _varint(tracks.uuid)
                    + _text(_TRACK_NAME, row.name)
                    + _SIBLING_RANK
                    + _varint(rank),
                )
            )
            self.tracks += 1
        return uuid

    def end(self, track: int, at: int) -> None:
        self.packet(
            _TIMESTAMP + _varint(at) + _field(_TRACK_EVENT, _END + _TRACK_UUID + _varint(track))
        )

    def event(
        self,
        kind: bytes,
        track: int,
        at: int,
        name: str,
        category: str,
        annotations: Iterable[tuple[str, Any]],
    ) -> None:
        parts = [
            kind,
            _TRACK_UUID,
            _varint(track),
            self.names(name) or _text(_EVENT_NAME, name),
            self.categories(category) or b"",
        ]
        for key, value in annotations:
            encoded = self.annotation(key, value)
            if encoded:
                parts += (_ANNOTATION, _varint(len(encoded)), encoded)
        self.packet(_TIMESTAMP + _varint(at) + _field(_TRACK_EVENT, b"".join(parts)))

    def annotation(self, key: str | None, value: Any) -> bytes:
        """A DebugAnnotation's fields: its name (*key*; none in an array) and *value*; empty
        for a null, which protobuf cannot say (JSON ``null`` inside an array)."""
        name = b"" if key is None else self.annotation_names(key) or _text(_A_NAME, key)
        if isinstance(value, str):
            if len(value) <= _INTERNED_LENGTH and key not in _UNIQUE:
                ref = self.strings(value)
                if ref is not None:
                    return name + ref
            return name + _text(_A_STRING, value)
        if isinstance(value, bool):
            return name + _A_BOOL + (b"\x01" if value else b"\x00")
        if isinstance(value, int) and -_INT64 <= value < _INT64:
            return name + _A_INT + _varint(value & ((1 << 64) - 1))
        if isinstance(value, float):
            return name + _A_DOUBLE + struct.pack("<d", value)
        if isinstance(value, list):
            items = b"".join(_field(_A_ARRAY, self.annotation(None, item)) for item in value)
            return name + (items or _text(_A_JSON, "[]"))
        if isinstance(value, dict):
            entries = b"".join(
                _field(_A_DICT, self.annotation(str(entry), item))
                for entry, item in value.items()
                if item is not None
            )
            return name + (entries or _text(_A_JSON, "{}"))
        if value is None:
            return name + _text(_A_JSON, "null") if key is None else b""
        return name + _text(_A_STRING, str(value))  # an integer past 64 bits


def write_perfetto_trace(
    engine: Engine,
    stream: BinaryIO,
    *,
    sources: Sequence[str] = (),
    show_progress: bool | None = None,
) -> ChromeTrace:
    """Write *engine*'s spans to *stream* as a Perfetto protobuf trace (a ``Trace`` message's
    packets), holding only the open slices of one process at a time; :class:`ValueError`
    without spans. *sources* and *show_progress* are as for the Chrome writer."""
    del sources  # the trace format has no place for them that the UI shows
    spans, _, runs = take_spans(engine)
    lifetimes = _lifetimes(engine)
    out = _Writer(stream)
    processes = 0
    current: Process | None = None
    tracks = _Tracks(0)
    closed: list[tuple[Row, int]] = []

    def close(upto: list[tuple[Row, int]]) -> None:
        for row, at in upto:
            out.end(out.track_of(tracks, row), at)
        upto.clear()

    def finish() -> None:
        # Whatever is still open ends, innermost first, on every row of the process.
        for row in tracks.layout.rows():
            close([(row, at) for at in reversed(row.open_ends)])
            row.open_ends.clear()

    with progress("writing", total=spans, unit="span", enabled=show_progress) as bar:
        for batch in ordered_spans(engine):
            for rank, run_id, service, group, start, end, name, *rest in batch:
                process = Process(rank, run_id, service)
                if process != current:
                    finish()
                    current = process
                    processes += 1
                    tracks = out.process(processes, process.label(with_run=runs > 1))
                    for number, (lifetime, begun, ended) in enumerate(
                        lifetimes.get(process, ()), 1
                    ):
                        row = tracks.layout.place(_LIFETIMES, begun, ended, closed)
                        close(closed)
                        title = f"lifetime {number}" + (" (a restart)" if number > 1 else "")
                        out.event(
                            _BEGIN,
                            out.track_of(tracks, row),
                            begun,
                            title,
                            _LIFETIMES,
                            [("lifetime", lifetime)],
                        )
                row = tracks.layout.place(group, start, end, closed)
                close(closed)
                track = out.track_of(tracks, row)
                out.event(_BEGIN, track, start, name, group, span_args(*rest[:6]).items())
                for event in json.loads(rest[6]) if rest[6] and rest[6] != "[]" else ():
                    attributes: Mapping[str, Any] = event.get("attributes") or {}
                    out.event(
                        _INSTANT,
                        track,
                        event["time_unix_nano"],
                        str(event.get("name")),
                        group,
                        attributes.items(),
                    )
            bar.update(len(batch))
    finish()
    out.flush()
    release_spans(engine)
    return ChromeTrace(processes, out.tracks, spans)


def _lifetimes(engine: Engine) -> dict[Process, list[tuple[str, int, int]]]:
    """Each process's lifetimes, earliest first: (lifetime, first start, last end)."""
    found: dict[Process, list[tuple[str, int, int]]] = {}
    for run_id, rank, service, lifetime, start, end in engine.rows(query("report_lifetimes")):
        found.setdefault(Process(rank, run_id, service), []).append((str(lifetime), start, end))
    for spans in found.values():
        spans.sort(key=lambda item: (item[1], -item[2]))
    return found
