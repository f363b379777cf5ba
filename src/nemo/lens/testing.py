"""Test support: reset nemo.lens's global state and capture the spans it emits.

For test suites of code instrumented with ``nemo.lens`` (needs the ``sdk`` extra);
docs/testing.md shows the fixtures.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from nemo.lens._core import state as _state
from nemo.lens.groups import SpanGroup
from nemo.lens.spec import resolve_for

if TYPE_CHECKING:
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

__all__ = ["capture_spans", "reset"]


def reset() -> None:
    """Restore nemo.lens's process-wide state to what a fresh import has.

    Shuts down whatever ``setup_telemetry`` installed (and restores the
    OpenTelemetry globals it set), forgets custom export strategies and the
    span-group namespaces registered by hand (``SpanRegistry.register``; the
    generated modules' stay), disables every span group, and forgets the cached
    default tracer and any provider routed to it. Safe to call at any time, any number of times.
    """
    from nemo.lens._core.handle import reset_for_testing

    reset_for_testing()


@contextmanager
def capture_spans(
    span_groups: str | Iterable[str] = "all",
    *,
    span_group_cls: type[SpanGroup] | tuple[type[SpanGroup], ...] = SpanGroup,
) -> Iterator[InMemorySpanExporter]:
    """Capture the spans nemo.lens emits inside the ``with`` block in memory.

    Installs an SDK ``TracerProvider`` with a ``SimpleSpanProcessor`` (spans are
    exported synchronously as they end) and an ``InMemorySpanExporter`` as the
    source of the default tracer, enables ``span_groups`` and yields the
    exporter; read spans with ``exporter.get_finished_spans()``.

    Args:
        span_groups: A spec string resolved against ``span_group_cls``
            (``"all"``, ``"default,step"``, ``"all,-optimizer"``) or an iterable
            of group names used as is.
        span_group_cls: The span-group class (or tuple of classes) a spec string
            resolves against and the spans' categories come from.

    On exit the previously enabled groups, span-group classes and default-tracer
    provider come back, and the capturing provider is shut down, so captures can nest.
    """
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    groups = (
        resolve_for(span_groups, span_group_cls) if isinstance(span_groups, str) else span_groups
    )
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))

    previous_groups = _state.enabled_span_groups()
    previous_classes = _state.span_group_classes()
    previous_provider = _state.installed_tracer_provider()
    _state.set_span_group_classes(span_group_cls)
    _state.set_enabled_span_groups(groups)
    _state.use_tracer_provider(provider)
    try:
        yield exporter
    finally:
        _state.set_span_group_classes(previous_classes)
        _state.set_enabled_span_groups(previous_groups)
        _state.use_tracer_provider(previous_provider)
        provider.shutdown()
