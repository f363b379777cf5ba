"""The providers the HTTP helpers hand to instrumentations: nemo.lens's by default, gated
by a span group on request. Needs no framework, so it runs without any extra."""

from __future__ import annotations

import pytest
from opentelemetry import metrics, trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

from nemo.lens import NemoLensConfig, set_enabled_span_groups, setup_telemetry
from nemo.lens.contrib._providers import GatedTracerProvider, resolve_providers

_PARENT = SpanContext(0xABC, 0xDEF, is_remote=True, trace_flags=TraceFlags(TraceFlags.SAMPLED))


def _sdk() -> tuple[TracerProvider, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


def test_defaults_follow_setup_telemetry_made_later() -> None:
    tracers, meters = resolve_providers(None, None, None, helper="h")
    tracer = tracers.get_tracer("instrumentation")  # taken before set-up, as instrumentations do
    exporter = InMemorySpanExporter()
    config = NemoLensConfig(enabled=True, exporter="none", metrics_enabled=False)
    setup_telemetry(config, span_exporter=exporter)
    tracer.start_span("after-set-up").end()
    assert [span.name for span in exporter.get_finished_spans()] == ["after-set-up"]
    assert isinstance(meters, metrics.MeterProvider)


def test_a_given_provider_is_used_as_is() -> None:
    provider, _ = _sdk()
    assert resolve_providers(provider, None, None, helper="h")[0] is provider


def test_gated_spans_exist_only_while_the_group_is_enabled() -> None:
    provider, exporter = _sdk()
    tracer = GatedTracerProvider(provider, "server").get_tracer("t")
    parent = trace.set_span_in_context(NonRecordingSpan(_PARENT))

    set_enabled_span_groups(["server"])
    tracer.start_span("on", context=parent).end()
    set_enabled_span_groups([])
    off = tracer.start_span("off", context=parent)
    off.end()

    (recorded,) = exporter.get_finished_spans()
    assert recorded.name == "on"
    assert recorded.parent is not None and recorded.parent.span_id == _PARENT.span_id
    # Disabled: no span, but the parent's identity passes through.
    assert off.is_recording() is False
    assert off.get_span_context() == _PARENT


def test_gated_current_span_parents_the_applications_spans() -> None:
    provider, exporter = _sdk()
    gated = GatedTracerProvider(provider, "server").get_tracer("t")
    app_tracer = provider.get_tracer("app")
    parent = trace.set_span_in_context(NonRecordingSpan(_PARENT))
    set_enabled_span_groups([])
    with gated.start_as_current_span("request", context=parent):
        app_tracer.start_span("handler").end()
    (handler,) = exporter.get_finished_spans()
    assert handler.parent is not None and handler.parent.span_id == _PARENT.span_id
    assert handler.context is not None and handler.context.trace_id == _PARENT.trace_id


def test_wrong_arguments_are_named() -> None:
    with pytest.raises(TypeError, match=r"instrument_x\(tracer_provider=...\) must be"):
        resolve_providers("svc", None, None, helper="instrument_x")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"instrument_x\(meter_provider=...\) must be"):
        resolve_providers(None, object(), None, helper="instrument_x")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="group must be a span-group name"):
        resolve_providers(None, None, "", helper="instrument_x")


def test_start_as_current_span_as_a_decorator_makes_a_span_for_every_call() -> None:
    provider, exporter = _sdk()
    tracer = GatedTracerProvider(provider, "server").get_tracer("t")
    set_enabled_span_groups(["server"])

    @tracer.start_as_current_span("handler")
    def handler(value: int) -> int:
        current = trace.get_current_span()
        assert current.is_recording()
        current.set_attribute("value", value)
        return value

    assert [handler(1), handler(2)] == [1, 2]
    spans = exporter.get_finished_spans()
    assert [(span.name, dict(span.attributes or {})) for span in spans] == [
        ("handler", {"value": 1, "lens.group": "server", "lens.span_category": "profiling"}),
        ("handler", {"value": 2, "lens.group": "server", "lens.span_category": "profiling"}),
    ]
    assert spans[0].context.span_id != spans[1].context.span_id
