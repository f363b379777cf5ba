"""Trace context as bytes and tensors: round trips, fixed sizes, and garbage tolerance."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry import baggage, trace
from opentelemetry.context import Context
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags, TraceState

from nemo.lens.contrib.nccl import (
    CONTEXT_BYTES,
    MAGIC,
    MIN_CONTEXT_BYTES,
    carrier_from_bytes,
    carrier_to_bytes,
    context_from_bytes,
    context_to_bytes,
    context_to_tensor,
    deserialize_context,
    extract_nccl_context,
    serialize_context,
)
from nemo.lens.propagation import continue_trace

_TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


def _context(
    trace_id: int = 0x0AF7651916CD43DD8448EB211C80319C,
    span_id: int = 0xB7AD6B7169203331,
    sampled: bool = True,
    state: TraceState | None = None,
    entries: dict[str, str] | None = None,
) -> Context:
    span_context = SpanContext(
        trace_id, span_id, is_remote=True, trace_flags=TraceFlags(int(sampled)), trace_state=state
    )
    ctx = trace.set_span_in_context(NonRecordingSpan(span_context))
    for key, value in (entries or {}).items():
        ctx = baggage.set_baggage(key, value, context=ctx)
    return ctx


def _ids(ctx: Context) -> tuple[int, int, bool]:
    remote = trace.get_current_span(ctx).get_span_context()
    return remote.trace_id, remote.span_id, remote.trace_flags.sampled


# -- round trips ----------------------------------------------------------------------------


def test_variable_length_round_trip_with_state_and_baggage() -> None:
    sent = _context(state=TraceState([("vendor", "v1")]), entries={"stage": "3", "run": "r 1"})
    encoded = context_to_bytes(sent)
    assert encoded.startswith(MAGIC)
    received = context_from_bytes(encoded)
    assert _ids(received) == _ids(sent)
    assert trace.get_current_span(received).get_span_context().trace_state == TraceState(
        [("vendor", "v1")]
    )
    assert baggage.get_all(received) == {"stage": "3", "run": "r 1"}


def test_fixed_size_is_exact_and_padding_is_ignored() -> None:
    encoded = context_to_bytes(_context(), CONTEXT_BYTES)
    assert len(encoded) == CONTEXT_BYTES
    assert encoded.endswith(b"\0")
    assert carrier_from_bytes(encoded) == {"traceparent": _TRACEPARENT}


def test_the_current_context_is_the_default() -> None:
    with continue_trace(_context()):
        encoded = context_to_bytes()
    assert carrier_from_bytes(encoded) == {"traceparent": _TRACEPARENT}


def test_no_span_encodes_an_empty_carrier() -> None:
    assert carrier_from_bytes(context_to_bytes(Context())) == {}
    assert trace.get_current_span(context_from_bytes(context_to_bytes(Context()))) is (
        trace.INVALID_SPAN
    )


def test_minimum_size_holds_a_traceparent() -> None:
    encoded = context_to_bytes(_context(), MIN_CONTEXT_BYTES)
    assert len(encoded) == MIN_CONTEXT_BYTES
    assert carrier_from_bytes(encoded) == {"traceparent": _TRACEPARENT}


def test_too_small_a_size_is_refused_with_the_minimum() -> None:
    with pytest.raises(ValueError) as info:
        context_to_bytes(_context(), MIN_CONTEXT_BYTES - 1)
    assert f"use at least MIN_CONTEXT_BYTES ({MIN_CONTEXT_BYTES})" in str(info.value)
    with pytest.raises(TypeError, match="size must be an int"):
        context_to_bytes(_context(), 512.0)  # type: ignore[arg-type]


def test_what_does_not_fit_is_dropped_baggage_first(caplog: pytest.LogCaptureFixture) -> None:
    sent = _context(state=TraceState([("vendor", "v1")]), entries={"blob": "x" * 400})
    with caplog.at_level(logging.WARNING, logger="nemo.lens.distributed"):
        fixed = context_to_bytes(sent, 200)
    assert len(fixed) == 200
    assert carrier_from_bytes(fixed) == {"traceparent": _TRACEPARENT, "tracestate": "vendor=v1"}
    assert "dropped baggage" in caplog.text

    tight = context_to_bytes(sent, MIN_CONTEXT_BYTES)
    assert carrier_from_bytes(tight) == {"traceparent": _TRACEPARENT}


def test_non_string_carrier_entries_are_left_out() -> None:
    carrier: dict[Any, Any] = {"traceparent": _TRACEPARENT, "n": 1, 2: "x"}
    assert carrier_from_bytes(carrier_to_bytes(carrier)) == {"traceparent": _TRACEPARENT}


def test_lists_and_memoryviews_decode() -> None:
    encoded = context_to_bytes(_context(), 128)
    assert carrier_from_bytes(list(encoded)) == {"traceparent": _TRACEPARENT}
    assert carrier_from_bytes(memoryview(bytearray(encoded))) == {"traceparent": _TRACEPARENT}


def test_a_bare_json_carrier_from_0_1_0_decodes() -> None:
    old = json.dumps({"traceparent": _TRACEPARENT}).encode()
    assert carrier_from_bytes(old) == {"traceparent": _TRACEPARENT}
    assert carrier_from_bytes(old + b"\0" * 10) == {"traceparent": _TRACEPARENT}


def test_the_0_1_0_names() -> None:
    with continue_trace(_context()):
        data = serialize_context()
    assert deserialize_context(data) == {"traceparent": _TRACEPARENT}
    assert deserialize_context(b"junk") is None
    # extract_nccl_context continues the current context, so junk keeps the caller's span.
    with continue_trace(_context(span_id=0x1111)):
        assert _ids(extract_nccl_context(b"junk"))[1] == 0x1111
        assert _ids(extract_nccl_context(data))[1] == 0xB7AD6B7169203331


# -- tensors --------------------------------------------------------------------------------


def test_tensor_round_trip() -> None:
    torch = pytest.importorskip("torch", reason="needs torch (the [torch] extra)")
    tensor = context_to_tensor(_context())
    assert tensor.dtype == torch.uint8
    assert tuple(tensor.shape) == (CONTEXT_BYTES,)
    assert _ids(context_from_bytes(tensor)) == _ids(_context())
    # A received buffer of another shape still decodes.
    assert carrier_from_bytes(tensor.reshape(16, -1)) == {"traceparent": _TRACEPARENT}


def test_tensor_of_the_wrong_dtype_gives_no_context() -> None:
    torch = pytest.importorskip("torch", reason="needs torch (the [torch] extra)")
    floats = context_to_tensor(_context()).to(torch.float32) * 1000
    assert carrier_from_bytes(floats) == {}
    assert carrier_from_bytes(torch.zeros(CONTEXT_BYTES, dtype=torch.uint8)) == {}


# -- garbage never raises ------------------------------------------------------------------


def _assert_clean(carrier: dict[str, str]) -> None:
    assert isinstance(carrier, dict)
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in carrier.items())


@settings(deadline=None)  # timing on a shared CI machine is not the point
@given(st.binary(max_size=700))
def test_arbitrary_bytes_never_raise(data: bytes) -> None:
    _assert_clean(carrier_from_bytes(data))
    assert isinstance(context_from_bytes(data), Context)
    _assert_clean(carrier_from_bytes(MAGIC + data))
    assert isinstance(context_from_bytes(MAGIC + b"\x01" + data), Context)


@settings(deadline=None)  # timing on a shared CI machine is not the point
@given(
    st.one_of(
        st.none(),
        st.integers(),
        st.text(max_size=50),
        st.floats(),
        st.lists(st.integers(), max_size=50),
        st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=3),
    )
)
def test_arbitrary_objects_never_raise(data: Any) -> None:
    _assert_clean(carrier_from_bytes(data))
    assert isinstance(context_from_bytes(data), Context)


_SPANS = st.builds(
    _context,
    trace_id=st.integers(1, 2**128 - 1),
    span_id=st.integers(1, 2**64 - 1),
    sampled=st.booleans(),
    entries=st.dictionaries(
        st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True),
        st.text(st.characters(codec="ascii", exclude_categories=["Cc"]), max_size=30),
        max_size=4,
    ),
)


@settings(deadline=None)  # timing on a shared CI machine is not the point
@given(_SPANS, st.data())
def test_damaged_encodings_never_raise(sent: Context, data: st.DataObject) -> None:
    encoded = bytearray(context_to_bytes(sent, CONTEXT_BYTES))
    cut = data.draw(st.integers(0, len(encoded)))
    _assert_clean(carrier_from_bytes(bytes(encoded[:cut])))
    where = data.draw(st.integers(0, len(encoded) - 1))
    encoded[where] ^= data.draw(st.integers(1, 255))
    _assert_clean(carrier_from_bytes(bytes(encoded)))


@settings(deadline=None)  # timing on a shared CI machine is not the point
@given(_SPANS, st.integers(MIN_CONTEXT_BYTES, 1024))
def test_any_context_round_trips_its_span_at_any_allowed_size(sent: Context, size: int) -> None:
    encoded = context_to_bytes(sent, size)
    assert len(encoded) == size
    assert _ids(context_from_bytes(encoded)) == _ids(sent)
