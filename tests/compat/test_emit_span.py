"""``emit_span``: an already-finished span over explicit epoch times (COMPAT.md §3)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from decimal import Decimal

import pytest
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from nemo.lens import emit_span, fallbacks, semconv, span_cm, span_utilities, testing
from nemo.lens.groups import DynamicSpanGroup, SpanGroup
from nemo.lens.propagation import extract_context

GROUP = DynamicSpanGroup(sorted(SpanGroup.ALL_GROUPS)[0])
START = "1767225600.123456789"  # 2026-01-01, to the nanosecond
END = "1767225601.987654321"


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    with testing.capture_spans([GROUP]) as exporter:
        yield exporter


@pytest.fixture(autouse=True)
def _skew_not_yet_logged(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(span_utilities, "_skew_logged", False)


def _only(exporter: InMemorySpanExporter) -> ReadableSpan:
    (span,) = exporter.get_finished_spans()
    return span


def test_decimal_text_and_decimals_keep_every_nanosecond(spans: InMemorySpanExporter) -> None:
    emit_span(None, "text", START, END)
    emit_span(None, "decimal", Decimal(START), Decimal(END))
    for span in spans.get_finished_spans():
        assert (span.start_time, span.end_time) == (1767225600123456789, 1767225601987654321)
    # Through a float the same text would lose its last digits.
    assert round(float(START) * 1e9) != 1767225600123456789


def test_floats_give_the_nanosecond_nearest_their_exact_value(spans: InMemorySpanExporter) -> None:
    emit_span(None, "float", 1767225600.5, 1767225600.75)
    emit_span(None, "int", 1767225600, 1767225601)
    float_span, int_span = spans.get_finished_spans()
    assert (float_span.start_time, float_span.end_time) == (
        1767225600500000000,
        1767225600750000000,
    )
    assert (int_span.start_time, int_span.end_time) == (1767225600000000000, 1767225601000000000)


def test_the_span_is_returned_ended_and_never_made_current(spans: InMemorySpanExporter) -> None:
    before = trace.get_current_span()
    span = emit_span(None, "done", START, END)
    assert span is not None and not span.is_recording()
    assert trace.get_current_span() is before
    assert _only(spans).name == "done"


def test_it_is_parented_by_the_current_span_unless_given_a_context(
    spans: InMemorySpanExporter,
) -> None:
    remote = extract_context({"traceparent": "00-" + "ab" * 16 + "-" + "cd" * 8 + "-01"})
    with span_cm("current") as current:
        emit_span(None, "child", START, END)
        emit_span(None, "elsewhere", START, END, context=remote)
        emit_span(None, "root", START, END, context=Context())
    by_name = {span.name: span for span in spans.get_finished_spans()}
    child_parent = by_name["child"].parent
    assert child_parent is not None
    assert child_parent.span_id == current.get_span_context().span_id
    elsewhere_parent = by_name["elsewhere"].parent
    assert elsewhere_parent is not None and elsewhere_parent.span_id == int("cd" * 8, 16)
    assert by_name["root"].parent is None


def test_an_enabled_group_tags_the_span(spans: InMemorySpanExporter) -> None:
    emit_span(None, "tagged", START, END, group=GROUP, attributes={"prompt": "secret", "n": 3})
    assert dict(_only(spans).attributes or {}) == {
        "prompt": "[REDACTED]",
        "n": 3,
        semconv.SPAN_GROUP: GROUP,
        semconv.SPAN_CATEGORY: SpanGroup.categories()[GROUP],
    }


def test_a_disabled_group_returns_none_before_any_check(spans: InMemorySpanExporter) -> None:
    disabled = DynamicSpanGroup("compat_never_enabled")
    bad: object = float("nan")
    assert emit_span(None, "skipped", bad, "not a time", group=disabled) is None  # type: ignore[arg-type]
    assert emit_span(42, 42, object(), None, group=disabled) is None  # type: ignore[arg-type]
    assert spans.get_finished_spans() == ()


@pytest.mark.parametrize(
    "bad", [float("nan"), float("inf"), float("-inf"), "nan", "Infinity", Decimal("NaN")]
)
def test_non_finite_times_raise(spans: InMemorySpanExporter, bad: float | str | Decimal) -> None:
    with pytest.raises(ValueError, match="not a finite time"):
        emit_span(None, "x", bad, END)
    with pytest.raises(ValueError, match=r"emit_span\(end_epoch_seconds=\.\.\.\)"):
        emit_span(None, "x", START, bad)
    assert spans.get_finished_spans() == ()


def test_malformed_and_mistyped_times_name_the_problem(spans: InMemorySpanExporter) -> None:
    with pytest.raises(ValueError, match="'soon' is not a number"):
        emit_span(None, "x", "soon", END)
    with pytest.raises(ValueError, match="out of range"):
        emit_span(None, "x", -1.0, END)
    with pytest.raises(TypeError, match="Unix-epoch seconds"):
        emit_span(None, "x", True, END)
    with pytest.raises(TypeError, match="span name as a str"):
        emit_span(None, 7, START, END)  # type: ignore[arg-type]
    assert spans.get_finished_spans() == ()


def test_an_end_before_the_start_is_clamped_marked_and_logged_once(
    spans: InMemorySpanExporter, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="nemo.lens.span_utilities"):
        emit_span(None, "skewed", "1767225600.5", "1767225600.25", attributes={"k": "v"})
        emit_span(None, "skewed.again", 1767225700.0, 1767225699.0)
    first, second = spans.get_finished_spans()
    assert first.end_time == first.start_time == 1767225600500000000
    assert dict(first.attributes or {}) == {
        "k": "v",
        semconv.INVERTED_SKEW: True,
        semconv.INVERTED_START_EPOCH_SECONDS: 1767225600.5,
        semconv.INVERTED_END_EPOCH_SECONDS: 1767225600.25,
        semconv.INVERTED_DELTA_SECONDS: -0.25,
    }
    assert (second.attributes or {})[semconv.INVERTED_DELTA_SECONDS] == -1.0
    warnings = [r for r in caplog.records if r.name == "nemo.lens.span_utilities"]
    assert len(warnings) == 1
    assert "clock skew" in warnings[0].getMessage()


def test_an_equal_start_and_end_is_not_skew(spans: InMemorySpanExporter) -> None:
    emit_span(None, "instant", START, START)
    span = _only(spans)
    assert span.start_time == span.end_time
    assert semconv.INVERTED_SKEW not in (span.attributes or {})


def test_an_explicit_tracer_is_used(spans: InMemorySpanExporter) -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    own = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(own))
    emit_span(provider.get_tracer("mine"), "own", START, END)
    assert [span.name for span in own.get_finished_spans()] == ["own"]
    assert spans.get_finished_spans() == ()


def test_the_fallback_emits_nothing() -> None:
    assert fallbacks.emit_span(None, "x", START, END, group=GROUP) is None
