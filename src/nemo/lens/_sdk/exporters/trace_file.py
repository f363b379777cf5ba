"""The ``file`` exporter's layout, trace format 2 (``docs/trace-format.md``): every line
names the process lifetime that wrote it, whose resource is written once, in its header.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExportResult

from nemo.lens import semconv
from nemo.lens._core.sanitize import clean_text, is_clean_text
from nemo.lens._core.state import SCOPE_VERSION
from nemo.lens._sdk.exporters.encoding import (
    LineLayout,
    attributes_json,
    encode_json,
    encode_text,
    ids_json,
    int_json,
    scope_json,
)
from nemo.lens._sdk.exporters.jsonl import FileSink, JsonLinesSpanExporter, LineSink

if TYPE_CHECKING:
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.util.instrumentation import InstrumentationScope

__all__ = ["TRACE_FORMAT", "LifetimeLayout", "TraceFileSpanExporter"]

TRACE_FORMAT: Final = 2
"""The version a header announces: what a reader of this file must handle."""

_WRITER: Final = f"nemo.lens {SCOPE_VERSION}"


class LifetimeLayout(LineLayout):
    """Lines that end with their scope and their lifetime; the resource goes in a header,
    made the first time a lifetime is seen and pending until :meth:`headers_written` says
    it is in the file (a failed write leaves no line whose header is nowhere)."""

    def __init__(self) -> None:
        super().__init__()
        self._resources: dict[str, Resource] = {}  # lifetime id -> its header's resource
        self._headers: dict[str, str] = {}  # lifetime id -> its header line
        self._pending: set[str] = set()  # the lifetimes whose header is not written yet

    def ending(self, resource: Resource, scope: InstrumentationScope | None) -> str:
        """``"scope":{...},"lifetime":"<id>"}``, or the resource written out when it has
        no lifetime of its own (none, not text, or shared with another resource)."""
        lifetime = self._lifetime(resource)
        if lifetime is None:
            return super().ending(resource, scope)
        return f'"scope":{scope_json(scope)},"lifetime":{encode_text(lifetime)}}}'

    def _lifetime(self, resource: Resource) -> str | None:
        lifetime = resource.attributes.get(semconv.LIFETIME_ID)
        if type(lifetime) is not str or not lifetime or not is_clean_text(lifetime):
            return None
        known = self._resources.get(lifetime)
        if known is None:
            self._resources[lifetime] = resource
            self._pending.add(lifetime)
            self._headers[lifetime] = (
                f'{{"trace_format":{TRACE_FORMAT},"lifetime":{encode_text(lifetime)},'
                f'"writer":{encode_text(_WRITER)},"resource":{attributes_json(resource.attributes)}}}'
            )
        elif known is not resource and dict(known.attributes) != dict(resource.attributes):
            return None  # another resource claims the id: its lines carry it whole
        return lifetime

    def pending_headers(self) -> dict[str, str]:
        """The headers not yet in the file, by lifetime."""
        return {lifetime: self._headers[lifetime] for lifetime in self._pending}

    def headers_written(self, lifetimes: Sequence[str]) -> None:
        self._pending.difference_update(lifetimes)

    def written_headers(self) -> str:
        """The header lines already in the file, for a new file at its path to begin with."""
        return "".join(
            f"{header}\n"
            for lifetime, header in self._headers.items()
            if lifetime not in self._pending
        )

    def lifetimes(self) -> list[str]:
        return list(self._resources)


class TraceFileSpanExporter(JsonLinesSpanExporter):
    """The ``file`` exporter."""

    def __init__(self, sink: LineSink) -> None:
        super().__init__(sink)
        self.line_layout: LifetimeLayout = LifetimeLayout()
        if isinstance(sink, FileSink):
            # A trace file removed or rotated is opened again: it starts with the headers.
            sink.preamble = self.line_layout.written_headers

    def export_lines(self, lines: Sequence[str]) -> SpanExportResult:
        """Write *lines*, after the header of any lifetime they are the first to name."""
        headers = self.line_layout.pending_headers()
        if not headers:
            return super().export_lines(lines)
        result = super().export_lines([*headers.values(), *lines])
        if result is SpanExportResult.SUCCESS:
            self.line_layout.headers_written(list(headers))
        return result

    def export_open(self, spans: Sequence[ReadableSpan], at_ns: int) -> SpanExportResult:
        """Record *spans*, still open at *at_ns* (``open_at_unix_nano``); with none, record
        that every lifetime of this file is alive then (``alive_at_unix_nano``)."""
        layout = self.line_layout
        if spans:
            lines = [_open_span_line(span, at_ns, layout) for span in spans]
        else:
            lines = [
                f'{{"lifetime":{encode_text(lifetime)},"alive_at_unix_nano":{at_ns}}}'
                for lifetime in layout.lifetimes()
            ]
        return self.export_lines(lines) if lines else SpanExportResult.SUCCESS


def _open_span_line(span: ReadableSpan, at_ns: int, layout: LineLayout) -> str:
    line = (
        f'{{"name":{encode_json(span.name)},{ids_json(span.context, span.parent)},'
        f'"kind":"{span.kind.name}","start_time_unix_nano":{int_json(span.start_time)},'
        f'"open_at_unix_nano":{at_ns},"attributes":{attributes_json(span.attributes)},'
        f"{layout.tail(span.resource, span.instrumentation_scope)}"
    )
    return line if line.isascii() or is_clean_text(line) else clean_text(line)
