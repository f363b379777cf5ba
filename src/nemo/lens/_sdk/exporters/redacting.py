"""The wrapper every span exporter nemo.lens attaches sits behind.

:class:`RedactingSpanExporter` applies :mod:`nemo.lens._sdk.exporters.redaction`'s
rules to every span on its way out, and chooses how a span recorded by
nemo.lens's primitives (:class:`~nemo.lens._sdk.recorded_span.RecordingSpan`)
reaches the exporter behind it:

- an exporter of the ``file`` line (``file``, and ``console`` with
  ``console_format="lens"``) gets lines, a recorded span's written straight
  from its fields (the batch encoder,
  :mod:`nemo.lens._sdk.exporters.recorded_lines`);
- OpenTelemetry's own OTLP exporters get the recorded span as it is: their
  encoder reads a span only through a finished span's public fields, which a
  recorded span has, so the SDK's span is not built for them;
- any other exporter (the default ``console``, which prints the SDK's
  ``to_json``; the caller's ``span_exporter=``) gets the SDK's
  ``ReadableSpan`` the recorded span stands for, as it would from the SDK.

Lines end as the exporter's ``line_layout`` says (the resource on every line
unless it says otherwise). An exporter that records spans still open (the
``file`` exporter's ``export_open``) gets them through :meth:`export_open`,
cleaned the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from nemo.lens._sdk.exporters.encoding import RESOURCE_ON_EVERY_LINE, LineLayout, encode_span
from nemo.lens._sdk.exporters.factory import is_otlp_span_exporter
from nemo.lens._sdk.exporters.recorded_lines import recorded_line, recorded_lines
from nemo.lens._sdk.exporters.redaction import Changes, clean_span
from nemo.lens._sdk.recorded_span import RecordingSpan

__all__ = ["RedactingSpanExporter", "encode_cleaned"]


def _readable(span: ReadableSpan) -> ReadableSpan:
    # A span recorded by nemo.lens's primitives builds the SDK's span it stands for.
    if type(span) is ReadableSpan:
        return span
    readable: Callable[[], ReadableSpan] | None = getattr(span, "readable", None)
    return readable() if readable is not None else span


def _as_is(span: ReadableSpan) -> ReadableSpan:
    return span


def encode_cleaned(
    span: ReadableSpan, changes: Changes, layout: LineLayout = RESOURCE_ON_EVERY_LINE
) -> str:
    """*span* redacted, made exportable and encoded as one JSON line ended as *layout*
    ends it (see ``encode_span``).

    A span nemo.lens's primitives recorded is written straight from its fields
    when nothing in it needs changing (``recorded_line``), which is
    the same line :func:`clean_span` and ``encode_span`` would write.
    """
    if isinstance(span, RecordingSpan):
        try:
            line = recorded_line(span, layout)
        except Exception:  # whatever it could not write, the general path writes
            line = None
        if line is not None:
            return line
    return encode_span(clean_span(_readable(span), changes), layout)


class RedactingSpanExporter(SpanExporter):
    """Passes spans to *inner* after :func:`clean_span`.

    *on_changes* is told, per batch, how many names and values had to be made
    exportable (by reason); nemo.lens reports the totals at shutdown.

    Spans recorded by nemo.lens's primitives
    (:class:`~nemo.lens._sdk.recorded_span.RecordingSpan`) reach *inner* as the
    SDK's ``ReadableSpan`` they describe, as lines, or as they are (see the
    module docstring).
    """

    def __init__(
        self, inner: SpanExporter, on_changes: Callable[[Changes], object] | None = None
    ) -> None:
        self.inner = inner
        self._on_changes = on_changes
        self._readable = _as_is if is_otlp_span_exporter(inner) else _readable
        export_lines: Callable[[Sequence[str]], SpanExportResult] | None = getattr(
            inner, "export_lines", None
        )
        self._export_lines = export_lines
        self._layout: LineLayout = getattr(inner, "line_layout", RESOURCE_ON_EVERY_LINE)
        self._export_open: Callable[[Sequence[ReadableSpan], int], SpanExportResult] | None = (
            getattr(inner, "export_open", None)
        )

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        """Export the cleaned spans through *inner*."""
        changes: Changes = {}
        export_lines = self._export_lines
        if export_lines is not None:
            # A batch of recorded spans is written by their own batch encoder.
            layout = self._layout
            lines = (
                recorded_lines(
                    spans, lambda span: encode_cleaned(span, changes, layout), RecordingSpan, layout
                )
                if spans and isinstance(spans[0], RecordingSpan)
                else [encode_cleaned(span, changes, layout) for span in spans]
            )
            if changes and self._on_changes is not None:
                self._on_changes(changes)
            return export_lines(lines)
        cleaned = self.cleaned(spans, changes)
        if changes and self._on_changes is not None:
            self._on_changes(changes)
        return self.inner.export(cleaned)

    @property
    def records_open_spans(self) -> bool:
        """Whether *inner* records spans still open (:meth:`export_open` writes them)."""
        return self._export_open is not None

    def export_open(self, spans: Sequence[ReadableSpan], at_ns: int) -> SpanExportResult:
        """Record *spans* (still open at *at_ns*) through *inner*, cleaned as :meth:`export`
        cleans spans; with none, *inner* records only that its process is alive then."""
        export_open = self._export_open
        if export_open is None:
            return SpanExportResult.SUCCESS
        changes: Changes = {}
        cleaned = [clean_span(span, changes) for span in spans]
        if changes and self._on_changes is not None:
            self._on_changes(changes)
        return export_open(cleaned, at_ns)

    def cleaned(self, spans: Sequence[ReadableSpan], changes: Changes) -> list[ReadableSpan]:
        """*spans* as an *inner* without ``export_lines`` receives them; what had to
        change is counted in *changes*."""
        readable = self._readable
        return [clean_span(readable(span), changes) for span in spans]

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Flush *inner*."""
        return self.inner.force_flush(timeout_millis)

    def shutdown(self) -> None:
        """Shut *inner* down."""
        self.inner.shutdown()
