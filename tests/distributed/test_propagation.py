"""W3C propagation: inject/extract, continue_trace and create_linked_span."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry import baggage, trace
from opentelemetry import context as otel_context
from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import (
    NonRecordingSpan,
    SpanContext,
    SpanKind,
    TraceFlags,
    TraceState,
)

from nemo.lens import (
    create_linked_span,
    extract_context,
    inject_context,
    managed_span,
    testing,
)
from nemo.lens.groups import SpanGroup
from nemo.lens.propagation import continue_trace, remote_span_context

_REMOTE = SpanContext(
    trace_id=0x0AF7651916CD43DD8448EB211C80319C,
    span_id=0xB7AD6B7169203331,
    is_remote=True,
    trace_flags=TraceFlags(TraceFlags.SAMPLED),
    trace_state=TraceState([("vendor", "v1")]),
)
_TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    with testing.capture_spans("all") as exporter:
        yield exporter


def _remote_context() -> Context:
    return trace.set_span_in_context(NonRecordingSpan(_REMOTE))


def _only(exporter: InMemorySpanExporter) -> ReadableSpan:
    (span,) = exporter.get_finished_spans()
    return span


# -- inject / extract ---------------------------------------------------------------------


def test_inject_writes_w3c_headers_of_the_current_span() -> None:
    token = otel_context.attach(_remote_context())
    try:
        carrier = inject_context()
    finally:
        otel_context.detach(token)
    assert carrier == {"traceparent": _TRACEPARENT, "tracestate": "vendor=v1"}


def test_inject_into_a_given_carrier_and_from_a_given_context() -> None:
    headers = {"content-type": "application/json"}
    returned = inject_context(headers, context=_remote_context())
    assert returned is headers
    assert headers["traceparent"] == _TRACEPARENT
    assert headers["content-type"] == "application/json"


def test_inject_without_a_span_writes_no_traceparent() -> None:
    assert inject_context(context=Context()) == {}


def test_round_trip_keeps_ids_flags_state_and_baggage() -> None:
    ctx = baggage.set_baggage("run", "r 42", context=_remote_context())
    ctx = baggage.set_baggage("stage", "3", context=ctx)
    received = extract_context(dict(inject_context(context=ctx)))
    remote = trace.get_current_span(received).get_span_context()
    assert (remote.trace_id, remote.span_id) == (_REMOTE.trace_id, _REMOTE.span_id)
    assert remote.is_remote is True
    assert remote.trace_flags.sampled is True
    assert remote.trace_state == _REMOTE.trace_state
    assert baggage.get_all(received) == {"run": "r 42", "stage": "3"}


def test_extract_accepts_capitalised_http_header_names() -> None:
    received = extract_context({"Traceparent": _TRACEPARENT})
    assert trace.get_current_span(received).get_span_context().span_id == _REMOTE.span_id


def test_extract_continues_from_a_given_base_context() -> None:
    base = baggage.set_baggage("kept", "yes", context=Context())
    received = extract_context({"traceparent": _TRACEPARENT}, context=base)
    assert baggage.get_baggage("kept", received) == "yes"
    assert trace.get_current_span(received).get_span_context().trace_id == _REMOTE.trace_id


@pytest.mark.parametrize(
    "carrier",
    [
        None,
        {},
        {"traceparent": "not-a-traceparent"},
        {"traceparent": "00-00000000000000000000000000000000-0000000000000000-01"},
        {"traceparent": 12345},
        {b"traceparent": _TRACEPARENT.encode()},
        {"traceparent": ["a", "b"]},
        [("traceparent", _TRACEPARENT)],
        "traceparent",
        42,
        object(),
    ],
    # (an object's repr names its address: an id the same in every process that collects)
    ids=lambda carrier: "object()" if type(carrier) is object else repr(carrier),
)
def test_garbage_carrier_gives_a_context_without_a_remote_span(carrier: Any) -> None:
    received = extract_context(carrier)
    assert trace.get_current_span(received).get_span_context().is_valid is False
    assert remote_span_context(carrier).is_valid is False


_TEXT = st.text(max_size=80)
_VALUE = st.one_of(_TEXT, st.binary(max_size=40), st.integers(), st.none(), st.lists(_TEXT))
_CARRIERS = st.one_of(
    st.dictionaries(
        st.one_of(st.sampled_from(["traceparent", "tracestate", "baggage", "Baggage"]), _TEXT),
        _VALUE,
        max_size=6,
    ),
    st.none(),
    st.integers(),
    _TEXT,
    st.lists(_VALUE, max_size=4),
)


@settings(deadline=None)  # timing on a shared CI machine is not the point
@given(_CARRIERS)
def test_extract_never_raises(carrier: Any) -> None:
    assert isinstance(extract_context(carrier), Context)
    remote_span_context(carrier)


@settings(deadline=None)  # timing on a shared CI machine is not the point
@given(
    st.dictionaries(
        st.sampled_from(["traceparent", "tracestate", "baggage"]), _TEXT, min_size=1, max_size=3
    )
)
def test_continue_trace_never_raises_and_always_restores_the_context(
    carrier: dict[str, str],
) -> None:
    before = otel_context.get_current()
    with continue_trace(carrier):
        pass
    assert otel_context.get_current() == before


# -- continue_trace -------------------------------------------------------------------------


def test_continue_trace_parents_spans_under_the_remote_span(
    spans: InMemorySpanExporter,
) -> None:
    with continue_trace({"traceparent": _TRACEPARENT, "baggage": "stage=2"}) as ctx:
        assert baggage.get_baggage("stage", ctx) == "2"
        with managed_span(SpanGroup.STEP, "train.step"):
            pass
    step = _only(spans)
    assert step.context is not None and step.parent is not None
    assert step.context.trace_id == _REMOTE.trace_id
    assert step.parent.span_id == _REMOTE.span_id
    assert trace.get_current_span().get_span_context().is_valid is False  # detached again


@pytest.mark.parametrize("remote", [None, {}, {"traceparent": "junk"}], ids=repr)
def test_continue_trace_without_a_remote_span_keeps_the_current_parent(
    spans: InMemorySpanExporter, remote: Any
) -> None:
    with managed_span(SpanGroup.JOB, "train.job") as job:
        assert job is not None
        with continue_trace(remote), managed_span(SpanGroup.STEP, "train.step"):
            pass
    step = next(s for s in spans.get_finished_spans() if s.name == "train.step")
    assert step.parent is not None
    assert step.parent.span_id == job.get_span_context().span_id


@pytest.mark.parametrize(
    "remote",
    [_remote_context(), _REMOTE, NonRecordingSpan(_REMOTE)],
    ids=["context", "span context", "span"],
)
def test_continue_trace_accepts_contexts_span_contexts_and_spans(
    spans: InMemorySpanExporter, remote: Any
) -> None:
    with continue_trace(remote), managed_span(SpanGroup.STEP, "train.step"):
        pass
    step = _only(spans)
    assert step.parent is not None and step.parent.span_id == _REMOTE.span_id


def test_continue_trace_detaches_when_the_body_raises() -> None:
    before = otel_context.get_current()
    with pytest.raises(RuntimeError), continue_trace({"traceparent": _TRACEPARENT}):
        raise RuntimeError("boom")
    assert otel_context.get_current() == before


# -- create_linked_span ---------------------------------------------------------------------


def _linked_ids(span: ReadableSpan) -> list[tuple[int, int]]:
    return [(link.context.trace_id, link.context.span_id) for link in span.links]


@pytest.mark.parametrize(
    "remote",
    [
        {"traceparent": _TRACEPARENT},
        _remote_context(),
        _REMOTE,
        NonRecordingSpan(_REMOTE),
    ],
    ids=["carrier", "context", "span context", "span"],
)
def test_linked_span_links_to_the_remote_and_keeps_the_local_parent(
    spans: InMemorySpanExporter, remote: Any
) -> None:
    with managed_span(SpanGroup.STEP, "train.step") as step:
        assert step is not None
        span = create_linked_span("pipeline.stage", remote, stage=1)
        assert trace.get_current_span() is step  # not made current
        span.end()
    stage = next(s for s in spans.get_finished_spans() if s.name == "pipeline.stage")
    assert _linked_ids(stage) == [(_REMOTE.trace_id, _REMOTE.span_id)]
    assert stage.parent is not None
    assert stage.parent.span_id == step.get_span_context().span_id
    assert stage.context is not None
    assert stage.context.trace_id == step.get_span_context().trace_id != _REMOTE.trace_id
    assert stage.attributes is not None and stage.attributes["stage"] == 1


@pytest.mark.parametrize(
    "remote",
    [None, {}, {"traceparent": "garbage"}, Context(), SpanContext(0, 0, False), 3.5],
    ids=repr,
)
def test_linked_span_without_a_valid_remote_has_no_link(
    spans: InMemorySpanExporter, remote: Any
) -> None:
    create_linked_span("solo", remote).end()
    assert _only(spans).links == ()


def test_linked_span_with_a_tracer_kind_and_redacted_attributes() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("test")
    create_linked_span(
        "recv", {"traceparent": _TRACEPARENT}, tracer, kind=SpanKind.CONSUMER, token="s3cret"
    ).end()
    span = _only(exporter)
    assert span.kind is SpanKind.CONSUMER
    assert span.attributes is not None and span.attributes["token"] == "[REDACTED]"
    assert _linked_ids(span) == [(_REMOTE.trace_id, _REMOTE.span_id)]


def test_linked_span_accepts_the_0_1_0_call_form() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("test")
    create_linked_span(tracer, "by-carrier", remote_carrier={"traceparent": _TRACEPARENT}).end()
    create_linked_span(tracer, "by-context", _remote_context(), stage=4).end()
    by_carrier, by_context = exporter.get_finished_spans()
    assert by_carrier.name == "by-carrier" and by_context.name == "by-context"
    expected = [(_REMOTE.trace_id, _REMOTE.span_id)]
    assert _linked_ids(by_carrier) == _linked_ids(by_context) == expected
    assert by_context.attributes is not None and by_context.attributes["stage"] == 4


def test_linked_span_argument_errors_name_the_problem() -> None:
    with pytest.raises(TypeError, match="needs the span name as a str"):
        create_linked_span(None)  # type: ignore[call-overload]
    with pytest.raises(TypeError, match="multiple values for 'remote'"):
        create_linked_span("x", {}, remote={})  # type: ignore[call-overload]
    with pytest.raises(TypeError, match="at most 3 positional arguments"):
        create_linked_span("x", {}, None, "extra")  # type: ignore[call-overload]
    with pytest.raises(TypeError, match="must be an OpenTelemetry Tracer"):
        create_linked_span("x", {}, tracer="nemo")  # type: ignore[call-overload]
    with pytest.raises(TypeError, match="must be a SpanKind"):
        create_linked_span("x", {}, kind="server")  # type: ignore[call-overload]


def test_extract_failure_is_logged_not_raised(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from nemo.lens import propagation

    def broken(*args: object, **kwargs: object) -> Context:
        raise ValueError("parser bug")

    monkeypatch.setattr(propagation._PROPAGATOR, "extract", broken)
    base = baggage.set_baggage("k", "v", context=Context())
    with caplog.at_level(logging.DEBUG, logger="nemo.lens.propagation"):
        assert extract_context({"traceparent": _TRACEPARENT}, context=base) is base
    assert "failed to parse" in caplog.text
