"""Redaction at the exit: no span leaves the process with a redact key's text in it.

:func:`nemo.lens.managed_span` and :func:`nemo.lens.safe_set_span_attributes`
redact as attributes go in. Code can also reach the span directly --
``span.set_attribute("prompt", ...)``, ``span.add_event("reply", {"output_text":
...})``, a link's attributes -- and that goes through the OpenTelemetry API,
which nemo.lens does not own. So every exporter nemo.lens attaches is wrapped
in :class:`RedactingSpanExporter`, which applies the same rule
(:func:`nemo.lens.redact_value`, :data:`nemo.lens.DEFAULT_REDACT_KEYS`) to span,
event and link attributes just before export.

What is *not* rewritten: span and event names, the status description, and the
``exception.message`` / ``exception.stacktrace`` attributes the SDK records from
an exception (their keys are not redact keys). Keep secrets out of those.

A span without anything to redact is passed through as is; only a span that
needs it is copied, so the cost is one memoised key check per string attribute.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.trace import Link
from opentelemetry.util.types import Attributes

from nemo.lens.helpers import redact_value

__all__ = ["RedactingSpanExporter", "redact_span"]


def _redacted(attributes: Attributes) -> dict[str, Any] | None:
    """A redacted copy of *attributes*, or ``None`` when nothing needs hiding."""
    if not attributes:
        return None
    copy: dict[str, Any] | None = None
    for key, value in attributes.items():
        if isinstance(value, (str, list, tuple)):
            hidden = redact_value(key, value)
            if hidden is not value:
                if copy is None:
                    copy = dict(attributes)
                copy[key] = hidden
    return copy


class _RedactedSpan(ReadableSpan):
    """A copy of a finished span with some attributes replaced; keeps the drop counts."""

    def __init__(
        self,
        original: ReadableSpan,
        attributes: Mapping[str, Any] | None,
        events: Sequence[Event],
        links: Sequence[Link],
    ) -> None:
        super().__init__(
            name=original.name,
            context=original.context,
            parent=original.parent,
            resource=original.resource,
            attributes=attributes,
            events=events,
            links=links,
            kind=original.kind,
            status=original.status,
            start_time=original.start_time,
            end_time=original.end_time,
            instrumentation_scope=original.instrumentation_scope,
        )
        self._original = original

    @property
    def dropped_attributes(self) -> int:
        """As counted on the original span."""
        return self._original.dropped_attributes

    @property
    def dropped_events(self) -> int:
        """As counted on the original span."""
        return self._original.dropped_events

    @property
    def dropped_links(self) -> int:
        """As counted on the original span."""
        return self._original.dropped_links


def redact_span(span: ReadableSpan) -> ReadableSpan:
    """Return *span* with redact-key text hidden in its span, event and link attributes.

    The same object comes back when there is nothing to hide.
    """
    attributes = _redacted(span.attributes)
    events: list[Event] | None = None
    for index, event in enumerate(span.events):
        hidden = _redacted(event.attributes)
        if hidden is not None:
            if events is None:
                events = list(span.events)
            events[index] = Event(event.name, hidden, event.timestamp)
    links: list[Link] | None = None
    for index, link in enumerate(span.links):
        hidden = _redacted(link.attributes)
        if hidden is not None:
            if links is None:
                links = list(span.links)
            links[index] = Link(link.context, hidden)
    if attributes is None and events is None and links is None:
        return span
    return _RedactedSpan(
        span,
        attributes if attributes is not None else span.attributes,
        events if events is not None else span.events,
        links if links is not None else span.links,
    )


class RedactingSpanExporter(SpanExporter):
    """Passes spans to *inner* after :func:`redact_span`."""

    def __init__(self, inner: SpanExporter) -> None:
        self.inner = inner

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        """Export the redacted spans through *inner*."""
        return self.inner.export([redact_span(span) for span in spans])

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Flush *inner*."""
        return self.inner.force_flush(timeout_millis)

    def shutdown(self) -> None:
        """Shut *inner* down."""
        self.inner.shutdown()
