"""What shutdown does to spans: the open ones end truncated, later ones are kept nowhere."""

from __future__ import annotations

import contextvars
import gc
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from nemo.lens import NemoLensConfig, managed_span, setup_telemetry, span_cm, trace_fn
from nemo.lens._sdk.pipeline import Pipeline
from nemo.lens.handle import TelemetryHandle


@pytest.fixture(autouse=True)
def _clean(clean_env: None) -> Iterator[None]:
    yield


def _open_in_own_context(enter: Callable[[], Any]) -> Any:
    """Enter a span's block in a context of its own, so it stays open (and current
    there) without becoming the current span of the test."""
    return contextvars.copy_context().run(enter)


def test_open_spans_of_both_kinds_end_with_the_truncation_event() -> None:
    exporter = InMemorySpanExporter()
    config = NemoLensConfig(enabled=True, exporter="none", metrics_enabled=False)
    handle = setup_telemetry(config, span_exporter=exporter)
    recorded = _open_in_own_context(managed_span("job", "recorded.open").__enter__)
    assert type(recorded).__name__ == "RecordingSpan"  # the light kind, not the SDK's
    sdk = handle.tracer.start_span("sdk.open")
    assert type(sdk).__module__.startswith("opentelemetry.sdk")
    with managed_span("job", "recorded.closed"):
        pass

    handle.shutdown()

    finished = {span.name: span for span in exporter.get_finished_spans()}
    assert set(finished) == {"recorded.open", "sdk.open", "recorded.closed"}
    for name in ("recorded.open", "sdk.open"):
        span = finished[name]
        assert (span.attributes or {})["nemo.span.truncated"] is True
        (event,) = span.events
        assert event.name == "nemo.span.truncated"
        assert dict(event.attributes or {}) == {
            "nemo.span.truncated.reason": "still open at telemetry shutdown"
        }
        assert event.timestamp == span.end_time
    assert finished["recorded.closed"].events == ()
    assert "nemo.span.truncated" not in (finished["recorded.closed"].attributes or {})


def _spans_after_shutdown(handle: TelemetryHandle, cached: list[trace.Tracer]) -> list[Any]:
    """1,000 spans of each way of starting one after *handle* shut down; half left open."""

    @trace_fn("step", "decorated")
    def decorated() -> Any:
        return trace.get_current_span()

    started: list[Any] = []
    for i in range(1_000):
        with managed_span("step", "primitive") as span:
            started.append(span)
        with span_cm("ungated") as span:
            started.append(span)
        started.append(decorated())
        for tracer in [handle.tracer, *cached]:
            span = tracer.start_span("by.tracer")
            if i % 2:
                span.end()
            started.append(span)
            with managed_span("step", "primitive.cached", tracer=tracer) as span:
                started.append(span)
    return started


def test_spans_started_after_shutdown_are_kept_nowhere(tmp_path: Path) -> None:
    config = NemoLensConfig(
        enabled=True,
        exporter="file",
        trace_file=str(tmp_path / "spans.jsonl"),
        metrics_enabled=False,
        span_groups="all",
    )
    handle = setup_telemetry(config)
    provider = handle.tracer_provider
    # Tracers cached before shutdown: the handle's, the global API's, the SDK's own,
    # and the primitives' recording tracer.
    cached = [
        handle.tracer,
        trace.get_tracer("cached.global"),
        provider.get_tracer("cached.sdk"),
        provider.primitives_tracer(),  # type: ignore[attr-defined]
    ]
    pipeline = handle._pipeline
    assert isinstance(pipeline, Pipeline) and pipeline.tracker is not None
    tracker, batcher = pipeline.tracker, pipeline.span_batcher
    assert batcher is not None
    handle.shutdown()

    started = _spans_after_shutdown(handle, cached)
    # Spans that are real objects of their own (not the shared no-op span): the
    # cached SDK and recording tracers still make such spans after shutdown.
    own = [
        span
        for span in started
        if span is not None and span is not trace.INVALID_SPAN and span.get_span_context().is_valid
    ]
    assert len(own) >= 3_000  # the probe sees spans (else it proves nothing)
    refs = [weakref.ref(span) for span in own]
    del started, own
    gc.collect()

    assert [ref for ref in refs if ref() is not None] == []
    assert tracker.open_count == 0
    assert batcher.pending == 0
