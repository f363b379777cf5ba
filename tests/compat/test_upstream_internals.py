"""Upstream-internal names that upstream's own test suites (0.1.0, v0.2.0) call.

Users copy those suites' fixtures and helpers, so the names stay reachable: thin shims
over the one mechanism each stands for (``nemo.lens._compat``).
"""

from __future__ import annotations

import pytest
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import (
    OTLPMetricExporter as GrpcMetricExporter,
)
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
    OTLPSpanExporter as GrpcSpanExporter,
)
from opentelemetry.exporter.otlp.proto.http.metric_exporter import (
    OTLPMetricExporter as HttpMetricExporter,
)
from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
    OTLPSpanExporter as HttpSpanExporter,
)
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from nemo.lens import providers, semconv, strategies
from nemo.lens.config import NemoLensConfig
from nemo.lens.handle import _should_export

# -- handle._should_export ------------------------------------------------------------------


def test_should_export_asks_the_configured_strategy() -> None:
    config = NemoLensConfig(export_strategy="single_rank", export_rank=2)
    assert [_should_export(config, rank=r, world_size=4) for r in range(4)] == [
        False,
        False,
        True,
        False,
    ]


def test_should_export_override_wins_over_the_config() -> None:
    config = NemoLensConfig(export_strategy="all_ranks")
    assert _should_export(config, rank=0, world_size=4, override=lambda c, r, w: False) is False
    assert _should_export(config, rank=1, world_size=4, override="single_rank") is False


def test_should_export_names_an_unknown_strategy() -> None:
    config = NemoLensConfig(export_strategy="all_ranks")
    with pytest.raises(ValueError, match="Unknown export_strategy 'nope'"):
        _should_export(config, rank=0, world_size=1, override="nope")


# -- strategies._REGISTRY / _REGISTRY_LOCK --------------------------------------------------


def test_registry_snapshot_and_restore_through_upstream_names() -> None:
    # What upstream's conftest does around every test.
    with strategies._REGISTRY_LOCK:
        snapshot = dict(strategies._REGISTRY)
    strategies.register_export_strategy("compat_even", lambda c, r, w: r % 2 == 0)
    assert "compat_even" in strategies._REGISTRY
    with strategies._REGISTRY_LOCK:
        strategies._REGISTRY.clear()
        strategies._REGISTRY.update(snapshot)
    assert "compat_even" not in strategies.registered_strategies()


# -- providers._build_span_exporter / _build_metric_exporter --------------------------------


@pytest.mark.parametrize(
    ("general", "traces", "expected"),
    [
        (None, None, GrpcSpanExporter),
        ("http/protobuf", None, HttpSpanExporter),
        ("grpc", "http/protobuf", HttpSpanExporter),
        ("http/protobuf", "grpc", GrpcSpanExporter),
    ],
)
def test_span_exporter_follows_the_protocol_variables(
    monkeypatch: pytest.MonkeyPatch, general: str | None, traces: str | None, expected: type
) -> None:
    for variable, value in (
        ("OTEL_EXPORTER_OTLP_PROTOCOL", general),
        ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", traces),
    ):
        if value is None:
            monkeypatch.delenv(variable, raising=False)
        else:
            monkeypatch.setenv(variable, value)
    exporter = providers._build_span_exporter(NemoLensConfig(enabled=True, exporter="otlp"))
    try:
        assert type(exporter) is expected
    finally:
        exporter.shutdown()  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("metrics", "expected"),
    [(None, GrpcMetricExporter), ("http/protobuf", HttpMetricExporter)],
)
def test_metric_exporter_follows_the_protocol_variables(
    monkeypatch: pytest.MonkeyPatch, metrics: str | None, expected: type
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
    if metrics is None:
        monkeypatch.delenv("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", raising=False)
    else:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", metrics)
    exporter = providers._build_metric_exporter(NemoLensConfig(enabled=True, exporter="otlp"))
    try:
        assert type(exporter) is expected
    finally:
        exporter.shutdown()  # type: ignore[union-attr]


def test_exporter_helpers_build_one_exporter_only() -> None:
    assert providers._build_span_exporter(NemoLensConfig(exporter="none")) is None
    with pytest.raises(ValueError, match="builds one"):
        providers._build_span_exporter(NemoLensConfig(exporter="otlp,console"))


# -- providers._OpenSpanCloser --------------------------------------------------------------


def test_open_span_closer_ends_open_spans_at_shutdown_marked_truncated() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(providers._OpenSpanCloser())
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("compat")
    tracer.start_span("done").end()
    parent = tracer.start_span("parent")
    tracer.start_span("child", context=trace.set_span_in_context(parent))
    provider.force_flush()
    assert [s.name for s in exporter.get_finished_spans()] == ["done"]
    provider.shutdown()
    finished = {s.name: s for s in exporter.get_finished_spans()}
    assert sorted(finished) == ["child", "done", "parent"]
    assert finished["child"].attributes[semconv.NEMO_SPAN_TRUNCATED] is True  # type: ignore[index]
    assert finished["child"].end_time <= finished["parent"].end_time  # type: ignore[operator]
    assert semconv.NEMO_SPAN_TRUNCATED not in (finished["done"].attributes or {})
