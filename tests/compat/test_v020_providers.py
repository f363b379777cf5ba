"""OpenTelemetry's global providers after set-up are SDK providers, as with nemo-lens v0.2.0.

Other tools rely on it: a backend's ``register()`` helper or an application adds its own
span processor with ``trace.get_tracer_provider().add_span_processor(...)``, tests flush
with ``trace.get_tracer_provider().force_flush()``, code checks ``isinstance``.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry import baggage, context, metrics, trace
from opentelemetry.processor.baggage import ALLOW_ALL_BAGGAGE_KEYS, BaggageSpanProcessor
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from nemo.lens import (
    NemoLensConfig,
    emit_span,
    managed_span,
    semconv,
    setup_telemetry,
    span_cm,
    trace_fn,
)
from nemo.lens.groups import SpanGroup
from nemo.lens.handle import TelemetryHandle
from nemo.lens.providers import SeedIndependentIdGenerator
from nemo.lens.sampling import RankAwareSampler
from tests.trace_file import spans_in

# What a module caches at import time, before any set-up.
_CACHED_AT_IMPORT = trace.get_tracer("an.instrumented.library")

_MARK = "test.seen_by"


@pytest.fixture
def file_setup(tmp_path: Path) -> Iterator[tuple[TelemetryHandle, Path]]:
    path = tmp_path / "trace.jsonl"
    config = NemoLensConfig(
        enabled=True,
        exporter="file",
        trace_file=str(path),
        span_groups="all",
        metrics_enabled=False,
    )
    handle = setup_telemetry(config)
    yield handle, path
    handle.shutdown()


def _lines(path: Path) -> list[dict[str, object]]:
    return spans_in(path)


def _instrumented_work() -> None:
    """One span of every kind nemo.lens makes, and two made by other instrumentation."""

    @trace_fn(SpanGroup.OPTIMIZER, "trace_fn")
    def step() -> None:
        with span_cm("span_cm"):
            pass

    with managed_span(SpanGroup.STEP, "managed_span"):
        step()
    emit_span(None, "emit_span", 1.0, 2.0, group=SpanGroup.STEP)
    _CACHED_AT_IMPORT.start_span("cached_at_import").end()
    trace.get_tracer("late").start_span("late").end()


_WORK_SPANS = {"managed_span", "trace_fn", "span_cm", "emit_span", "cached_at_import", "late"}


def test_the_global_tracer_provider_is_an_sdk_provider_with_what_tools_use(
    file_setup: tuple[TelemetryHandle, Path],
) -> None:
    handle, _ = file_setup
    provider = trace.get_tracer_provider()
    assert isinstance(provider, TracerProvider)
    for method in ("force_flush", "shutdown", "add_span_processor", "get_tracer"):
        assert callable(getattr(provider, method))
    assert dict(provider.resource.attributes) == dict(handle.resource_attributes)
    own = handle.tracer_provider
    assert isinstance(own, TracerProvider)
    assert provider.id_generator is own.id_generator
    assert isinstance(provider.id_generator, SeedIndependentIdGenerator)
    assert provider.force_flush() is True


def test_the_sampler_is_the_rank_aware_one_when_enabled() -> None:
    config = NemoLensConfig(enabled=True, exporter="none", sampler_enabled=True)
    handle = setup_telemetry(config, rank=3, world_size=4, span_exporter=InMemorySpanExporter())
    sampler = trace.get_tracer_provider().sampler  # type: ignore[attr-defined]
    assert isinstance(sampler, RankAwareSampler)
    handle.shutdown()


def test_a_third_party_processor_added_globally_sees_every_span(
    file_setup: tuple[TelemetryHandle, Path],
) -> None:
    _, path = file_setup
    provider = trace.get_tracer_provider()
    assert isinstance(provider, TracerProvider)
    # A real third-party processor: it copies baggage onto each span as it starts.
    provider.add_span_processor(BaggageSpanProcessor(ALLOW_ALL_BAGGAGE_KEYS))
    theirs = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(theirs))

    token = context.attach(baggage.set_baggage(_MARK, "baggage-processor"))
    try:
        _instrumented_work()
    finally:
        context.detach(token)
    assert provider.force_flush() is True

    assert {span.name for span in theirs.get_finished_spans()} == _WORK_SPANS
    # nemo.lens's own exporter got the same spans, each marked by the processor's
    # on_start: it saw them start (emit_span's is made and ended at once, with the mark).
    written = {line["name"]: line for line in _lines(path)}
    assert set(written) == _WORK_SPANS
    for name, line in written.items():
        attributes = line["attributes"]
        assert isinstance(attributes, dict)
        assert attributes.get(_MARK) == "baggage-processor", name


def test_the_global_meter_provider_is_an_sdk_provider_that_flushes() -> None:
    reader = InMemoryMetricReader()
    config = NemoLensConfig(enabled=True, exporter="none")
    handle = setup_telemetry(config, span_exporter=InMemorySpanExporter(), metric_reader=reader)
    provider = metrics.get_meter_provider()
    assert isinstance(provider, MeterProvider)
    provider.get_meter("app").create_counter("app.things").add(3)
    assert provider.force_flush() is True
    data = reader.get_metrics_data()
    assert data is not None
    names = {
        metric.name
        for resource_metrics in data.resource_metrics
        for scope in resource_metrics.scope_metrics
        for metric in scope.metrics
    }
    assert "app.things" in names
    handle.shutdown()


def test_re_initialisation_moves_the_globals_to_the_new_set_up(tmp_path: Path) -> None:
    cached = trace.get_tracer("used.after.re-init")  # OpenTelemetry's proxy, unused so far
    first, second = InMemorySpanExporter(), InMemorySpanExporter()
    config = NemoLensConfig(enabled=True, exporter="none", service_name="first")
    setup_telemetry(config, span_exporter=first)
    config = NemoLensConfig(enabled=True, exporter="none", service_name="second")
    handle = setup_telemetry(config, span_exporter=second, _allow_reinit=True)
    global_provider = trace.get_tracer_provider()
    assert isinstance(global_provider, TracerProvider)
    assert global_provider.resource.attributes[semconv.SERVICE_NAME] == "second"
    cached.start_span("after re-init").end()
    assert [s.name for s in second.get_finished_spans()] == ["after re-init"]
    assert first.get_finished_spans() == ()
    handle.shutdown()


def test_a_processor_added_with_no_set_up_active_joins_the_next_one() -> None:
    handle = setup_telemetry(
        NemoLensConfig(enabled=True, exporter="none"), span_exporter=InMemorySpanExporter()
    )
    provider = trace.get_tracer_provider()
    handle.shutdown()
    theirs = InMemorySpanExporter()
    assert isinstance(provider, TracerProvider)
    provider.add_span_processor(SimpleSpanProcessor(theirs))
    assert provider.force_flush() is True  # nothing to flush, and no error

    config = NemoLensConfig(enabled=True, exporter="none", span_groups="all")
    handle = setup_telemetry(config, span_exporter=InMemorySpanExporter())
    with managed_span(SpanGroup.STEP, "next"):
        pass
    assert [s.name for s in theirs.get_finished_spans()] == ["next"]
    handle.shutdown()


def test_shutting_the_global_provider_down_keeps_open_spans_and_the_handle_harmless() -> None:
    exporter = InMemorySpanExporter()
    config = NemoLensConfig(enabled=True, exporter="none", span_groups="all")
    handle = setup_telemetry(config, span_exporter=exporter)

    def open_the_job() -> None:
        managed_span(SpanGroup.JOB, "job").__enter__()  # and never left

    # In a copy of the context: the open span stays current there, not in later tests.
    contextvars.copy_context().run(open_the_job)
    provider = trace.get_tracer_provider()
    assert isinstance(provider, TracerProvider)
    provider.shutdown()  # what v0.2.0's users call at the end of a job
    (job,) = exporter.get_finished_spans()
    assert job.name == "job"
    assert job.attributes is not None and job.attributes[semconv.SPAN_TRUNCATED] is True
    assert handle.shutdown() is True
    assert len(exporter.get_finished_spans()) == 1
