"""broadcast_trace_context in one process: without torch, without a process group, and in
a one-rank gloo group (the multi-rank behaviour is in test_multi_rank.py)."""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import baggage, trace
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

from nemo.lens import broadcast_trace_context
from nemo.lens.propagation import continue_trace

_REMOTE = SpanContext(
    trace_id=0x1234, span_id=0x5678, is_remote=False, trace_flags=TraceFlags(TraceFlags.SAMPLED)
)


def test_returns_none_without_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    # A None entry makes `import torch.distributed` raise ImportError, as on a
    # machine without torch, even when another test already imported it.
    monkeypatch.setitem(sys.modules, "torch", None)
    monkeypatch.setitem(sys.modules, "torch.distributed", None)
    assert broadcast_trace_context(0) is None
    assert broadcast_trace_context(3, src_rank=1) is None


def test_returns_none_without_a_process_group() -> None:
    dist = pytest.importorskip("torch.distributed", reason="needs torch (the [torch] extra)")
    assert not dist.is_initialized()
    assert broadcast_trace_context(0) is None


def test_returns_none_when_torch_has_no_distributed_support(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    dist = pytest.importorskip("torch.distributed", reason="needs torch (the [torch] extra)")
    monkeypatch.setattr(dist, "is_available", lambda: False)
    assert broadcast_trace_context(0) is None


@pytest.fixture
def one_rank_group(tmp_path: Path) -> Iterator[Any]:
    """A gloo process group of one rank in this process, through a file store (no ports)."""
    dist = pytest.importorskip("torch.distributed", reason="needs torch (the [torch] extra)")
    if not dist.is_available() or not dist.is_gloo_available():
        pytest.skip("this torch build has no gloo backend")
    dist.init_process_group(
        "gloo", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1
    )
    try:
        yield dist
    finally:
        dist.destroy_process_group()


_TRACEPARENT = "00-00000000000000000000000000001234-0000000000005678-01"


def _under_remote_span() -> AbstractContextManager[object]:
    ctx = trace.set_span_in_context(NonRecordingSpan(_REMOTE))
    return continue_trace(baggage.set_baggage("stage", "7", context=ctx))


@pytest.mark.usefixtures("one_rank_group")
def test_source_rank_gets_its_own_context_back() -> None:
    with _under_remote_span():
        carrier = broadcast_trace_context(0)
    assert carrier == {"traceparent": _TRACEPARENT, "baggage": "stage=7"}


@pytest.mark.usefixtures("one_rank_group")
def test_without_a_span_the_carrier_is_empty() -> None:
    assert broadcast_trace_context(0) == {}


@pytest.mark.usefixtures("one_rank_group")
def test_an_explicit_device_is_used() -> None:
    with _under_remote_span():
        carrier = broadcast_trace_context(0, device="cpu")
    assert carrier is not None and carrier["traceparent"] == _TRACEPARENT


@pytest.mark.usefixtures("one_rank_group")
def test_a_wrong_rank_is_corrected_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    # Rank 5 does not exist; the group says this process is rank 0, the source.
    with _under_remote_span(), caplog.at_level(logging.WARNING, logger="nemo.lens.distributed"):
        carrier = broadcast_trace_context(5)
    assert carrier is not None and carrier["traceparent"] == _TRACEPARENT
    assert "broadcast_trace_context(rank=5) called on global rank 0" in caplog.text
