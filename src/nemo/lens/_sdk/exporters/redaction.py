"""The last step before every exporter: secrets redacted (the primitives' rule, however an
attribute was set), every name and value made exportable (:mod:`nemo.lens._core.sanitize`),
each change counted. What has nothing to change comes back as it is.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, TypeVar

from opentelemetry.attributes import BoundedAttributes
from opentelemetry.sdk._logs import ReadableLogRecord
from opentelemetry.sdk.metrics.export import MetricsData
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import Link
from opentelemetry.trace.status import Status
from opentelemetry.util.types import Attributes

from nemo.lens._core.redaction import DEFAULT_REDACT_KEYS, is_redact_key
from nemo.lens._core.sanitize import (
    INT64_MAX,
    INT64_MIN,
    SURROGATES,
    clean_name,
    clean_text,
    clean_value,
    is_clean_text,
)

__all__ = [
    "Changes",
    "HashedResource",
    "SpanCopy",
    "clean_attributes",
    "clean_log_record",
    "clean_metrics_data",
    "clean_resource",
    "clean_span",
    "exportable_resource",
]

_REDACTED: Final = "[REDACTED]"

Changes = dict[str, int]
"""How many names and attributes were changed, by reason (see :mod:`~.sanitize`)."""


def _note(changes: Changes, reason: str | None) -> None:
    if reason is not None:
        changes[reason] = changes.get(reason, 0) + 1


def _hide_all(value: object) -> object:
    # The value with every str and bytes in it, however deep, replaced by [REDACTED].
    if isinstance(value, (str, bytes)):
        return _REDACTED
    if isinstance(value, (list, tuple)):
        items = [_hide_all(item) for item in value]
        return items if isinstance(value, list) else tuple(items)
    if isinstance(value, Mapping):
        return {key: _hide_all(item) for key, item in value.items()}
    return value


def _redact_deep(key: object, value: object) -> object:
    # The value redacted as the value of attribute *key*; itself if nothing is hidden.
    if isinstance(key, str) and is_redact_key(key, DEFAULT_REDACT_KEYS):
        if isinstance(value, (str, bytes, list, tuple, Mapping)):
            hidden = _hide_all(value)
            return value if hidden == value else hidden
        return value
    if isinstance(value, Mapping):
        copy: dict[Any, object] | None = None
        for item_key, item in value.items():
            hidden = _redact_deep(item_key, item)
            if hidden is not item:
                if copy is None:
                    copy = dict(value)
                copy[item_key] = hidden
        return value if copy is None else copy
    if isinstance(value, (list, tuple)) and any(isinstance(item, Mapping) for item in value):
        items = [_redact_deep(None, item) for item in value]
        if all(new is old for new, old in zip(items, value, strict=True)):
            return value
        return items if isinstance(value, list) else tuple(items)
    return value


def clean_attributes(attributes: Attributes, changes: Changes) -> dict[str, Any] | None:
    """A redacted, exportable copy of *attributes*, or ``None`` when nothing changes. Each
    attribute made exportable is counted once in *changes* (redaction, the rule, is not)."""
    if not attributes:
        return None
    # The common case, spelled out: this runs for every attribute of every span.
    value: Any
    for key, value in attributes.items():
        if type(key) is not str or not (key.isascii() or is_clean_text(key)):
            break
        kind = type(value)
        if kind is str:
            if is_redact_key(key, DEFAULT_REDACT_KEYS) or not (
                value.isascii() or is_clean_text(value)
            ):
                break
        elif kind is int:
            if not INT64_MIN <= value <= INT64_MAX:
                break
        elif (kind is not float and kind is not bool) and (
            _redact_deep(key, value) is not value or clean_value(value)[1] is not None
        ):
            break
    else:
        return None
    cleaned: dict[str, Any] = {}
    for key, value in attributes.items():
        text, key_reason = clean_name(key)
        exportable, value_reason = clean_value(_redact_deep(text, value))
        _note(changes, key_reason or value_reason)
        cleaned[text] = exportable
    return cleaned


class SpanCopy(ReadableSpan):
    """A copy of a finished span with some fields replaced; keeps the drop counts."""

    def __init__(self, original: ReadableSpan, **replaced: Any) -> None:
        fields = {name: getattr(original, name) for name in _SPAN_FIELDS}
        super().__init__(**(fields | replaced))
        self._original = original

    dropped_attributes = property(lambda self: self._original.dropped_attributes)
    dropped_events = property(lambda self: self._original.dropped_events)
    dropped_links = property(lambda self: self._original.dropped_links)


_SPAN_FIELDS: Final = (
    "name", "context", "parent", "resource", "attributes", "events", "links", "kind",
    "status", "start_time", "end_time", "instrumentation_scope",
)  # fmt: skip


def _clean_scope(
    scope: InstrumentationScope | None, changes: Changes
) -> InstrumentationScope | None:
    if scope is None:
        return None
    name, version = scope.name, scope.version
    if (type(name) is str and name.isascii()) and (version is None or version.isascii()):
        return scope
    name, name_reason = clean_name(name)
    version, version_reason = (None, None) if version is None else clean_name(version)
    if name_reason is None and version_reason is None:
        return scope
    _note(changes, name_reason or version_reason)
    return InstrumentationScope(name, version, scope.schema_url, scope.attributes)


# Resources are shared by every span of a provider and immutable: each is checked once
# (64 at most kept). Entries hold the resource so its id cannot be reused meanwhile.
_RESOURCES: dict[int, tuple[Resource, Resource, Changes]] = {}


def clean_resource(resource: Resource) -> tuple[Resource, Changes]:
    """*resource* with every attribute made exportable (the same object when nothing needed
    changing), and what was changed."""
    entry = _RESOURCES.get(id(resource))
    if entry is not None and entry[0] is resource:
        return entry[1], entry[2]
    changes: Changes = {}
    cleaned = clean_attributes(resource.attributes, changes)
    result = resource if cleaned is None else Resource(cleaned, resource.schema_url)
    if len(_RESOURCES) >= 64:
        _RESOURCES.clear()
    _RESOURCES[id(resource)] = (resource, result, changes)
    return result, changes


def clean_span(span: ReadableSpan, changes: Changes) -> ReadableSpan:
    """*span* with redact-key text hidden (span, event and link attributes) and every name
    and value made exportable, what changed counted in *changes*."""
    replaced: dict[str, Any] = {}
    attributes = clean_attributes(span.attributes, changes)
    if attributes is not None:
        replaced["attributes"] = attributes
    name = span.name
    if type(name) is not str or not (name.isascii() or is_clean_text(name)):
        replaced["name"], reason = clean_name(name)
        _note(changes, reason)

    events = span.events and _each(span.events, lambda event: _clean_event(event, changes))
    if events:
        replaced["events"] = events
    links = span.links and _each(span.links, lambda link: _clean_link(link, changes))
    if links:
        replaced["links"] = links
    description = span.status.description
    if description is not None and not is_clean_text(description):
        replaced["status"] = Status(span.status.status_code, clean_text(description))
        _note(changes, SURROGATES)
    scope = _clean_scope(span.instrumentation_scope, changes)
    if scope is not span.instrumentation_scope:
        replaced["instrumentation_scope"] = scope
    resource, resource_changes = clean_resource(span.resource)
    if resource is not span.resource:
        replaced["resource"] = resource
        for reason, count in resource_changes.items():
            changes[reason] = changes.get(reason, 0) + count
    return SpanCopy(span, **replaced) if replaced else span


def _clean_event(event: Event, changes: Changes) -> Event | None:
    name, reason = clean_name(event.name)
    hidden = clean_attributes(event.attributes, changes)
    if hidden is None and reason is None:
        return None
    _note(changes, reason)
    return Event(name, event.attributes if hidden is None else hidden, event.timestamp)


def _clean_link(link: Link, changes: Changes) -> Link | None:
    hidden = clean_attributes(link.attributes, changes)
    return None if hidden is None else Link(link.context, hidden)


_T = TypeVar("_T")


def _each(items: Sequence[_T], clean: Callable[[_T], _T | None]) -> list[_T] | None:
    # The items, each replaced by clean(item) unless that is None; None when none was.
    cleaned: list[_T] | None = None
    for index, item in enumerate(items):
        new = clean(item)
        if new is not None:
            if cleaned is None:
                cleaned = list(items)
            cleaned[index] = new
    return cleaned


def _replace(item: _T, **fields: Any) -> _T | None:
    # The dataclass with the fields given not None; None when there is none.
    given = {name: value for name, value in fields.items() if value is not None}
    return dataclasses.replace(item, **given) if given else None  # type: ignore[type-var]


def clean_metrics_data(data: MetricsData, changes: Changes) -> MetricsData:
    """*data* with data point and exemplar attributes redacted and made exportable (after
    aggregation: series that differed only in a secret become points alike)."""

    def exemplar(exemplar: Any) -> Any:
        hidden = clean_attributes(exemplar.filtered_attributes, changes)
        return _replace(exemplar, filtered_attributes=hidden)

    def point(point: Any) -> Any:
        exemplars = getattr(point, "exemplars", None) or ()
        attributes = clean_attributes(point.attributes, changes)
        return _replace(point, attributes=attributes, exemplars=_each(exemplars, exemplar))

    def metric(metric: Any) -> Any:
        points = _each(getattr(metric.data, "data_points", None) or (), point)
        data = None if points is None else dataclasses.replace(metric.data, data_points=points)
        return _replace(metric, data=data)

    def scope(scope: Any) -> Any:
        return _replace(scope, metrics=_each(scope.metrics, metric))

    def resource(resource: Any) -> Any:
        return _replace(resource, scope_metrics=_each(resource.scope_metrics, scope))

    cleaned = _replace(data, resource_metrics=_each(data.resource_metrics, resource))
    return data if cleaned is None else cleaned


def clean_log_record(record: ReadableLogRecord, changes: Changes) -> ReadableLogRecord:
    """*record* with its attributes redacted and its attributes and body made exportable
    (the body is the message: not redacted)."""
    log_record = record.log_record
    original = log_record.attributes
    attributes = clean_attributes(original, changes)
    body, body_reason = clean_value(log_record.body)
    if attributes is None and body_reason is None:
        return record
    _note(changes, body_reason)
    replaced = copy.copy(log_record)
    if attributes is not None:
        bounded = BoundedAttributes(attributes=attributes, immutable=False)
        if isinstance(original, BoundedAttributes):
            bounded.dropped = original.dropped
        replaced.attributes = bounded
    replaced.body = body  # type: ignore[assignment]
    return dataclasses.replace(record, log_record=replaced)


class HashedResource(Resource):
    """A resource whose hash is computed once (the OTLP encoders hash it per record, and the
    SDK's writes all its attributes as JSON each time); equal to the plain one."""

    _hash: int | None = None

    def __hash__(self) -> int:
        value = self._hash
        if value is None:
            value = self._hash = super().__hash__()
        return value


def exportable_resource(resource: Resource) -> tuple[HashedResource, tuple[Changes, str] | None]:
    """The job's *resource* as the providers get it and, when a value had to be made
    exportable, what changed with the warning that says so."""
    cleaned, changes = clean_resource(resource)
    report = None
    if changes:
        keys = sorted(
            key
            for key, value in resource.attributes.items()
            if cleaned.attributes.get(key) != value
        )
        shown = ", ".join(repr(key) for key in keys) or "(keys that were not valid text)"
        explanation = (
            f"nemo.lens: resource attribute(s) {shown} held values no exporter can write as "
            f"they are ({next(iter(changes))}); exported changed. They come from the job's "
            "configuration or environment (SLURM_*, WANDB_*, OTEL_RESOURCE_ATTRIBUTES, ...)."
        )
        report = (changes, explanation)
    return HashedResource(cleaned.attributes, cleaned.schema_url), report
