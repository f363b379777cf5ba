"""Profiler mirroring (``NEMO_LENS_PROFILER``): a recorded span's ranges in the PyTorch
profiler's trace and through the nvtx package's API; off by default; bad settings refused."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterator
from typing import Any, Final

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from nemo.lens import NemoLensConfig, managed_span, setup_telemetry
from nemo.lens._core import state as core_state
from nemo.lens._core.destinations import PROFILERS
from nemo.lens._sdk import mirroring
from nemo.lens._sdk.recording import RecordingSpan, RecordingTracer
from nemo.lens.groups import SpanGroup

pytestmark = pytest.mark.usefixtures("clean_env", "unset_providers")

# Both extras are optional; CI sets NEMO_LENS_REQUIRE_PROFILERS=1, where their absence fails.
if os.environ.get("NEMO_LENS_REQUIRE_PROFILERS", "").strip() == "1":
    import nvtx
    import torch
else:
    torch = pytest.importorskip("torch")
    nvtx = pytest.importorskip("nvtx")

# Two groups the job enables and one it leaves off, from the generated vocabulary.
OUTER: Final = SpanGroup.STEP
INNER: Final = SpanGroup.FORWARD_BACKWARD
OFF: Final = SpanGroup.EVALUATE
SPEC = f"{OUTER},{INNER}"


def _set_up(profiler: str, exporter: InMemorySpanExporter | None = None) -> None:
    config = NemoLensConfig(
        enabled=True, exporter="none", span_groups=SPEC, profiler=profiler, metrics_enabled=False
    )
    setup_telemetry(config, rank=0, world_size=1, span_exporter=exporter)


def _loop(steps: int) -> None:
    for step in range(steps):
        with managed_span(OUTER, "train.step", iteration=step):
            with managed_span(INNER, "fwd"):
                pass
            with managed_span(OFF, "eval"):
                pass


def _annotations(prof: Any) -> list[Any]:
    return [event for event in prof.events() if event.is_user_annotation]


class _Domain:
    """Stands in for the nvtx package's domain: records what is opened and closed."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any, int]] = []
        self._next = 0
        self._lock = threading.Lock()

    def get_event_attributes(self, message: str, category: str | None) -> tuple[str, Any]:
        return (message, category)

    def start_range(self, attributes: tuple[str, Any]) -> int:
        with self._lock:
            self._next += 1
            self.calls.append(("start", (*attributes, self._next), threading.get_ident()))
            return self._next

    def end_range(self, range_id: int) -> None:
        self.calls.append(("end", range_id, threading.get_ident()))

    def kinds(self) -> list[tuple[str, Any]]:
        return [call[:2] for call in self.calls]


@pytest.fixture
def domain(monkeypatch: pytest.MonkeyPatch) -> Iterator[_Domain]:
    """The nvtx package's domain for ``nemo.lens``, replaced at its lookup."""
    fake = _Domain()
    asked: list[str] = []

    def get_domain(name: str) -> _Domain:
        asked.append(name)
        return fake

    monkeypatch.setattr(nvtx, "get_domain", get_domain)
    yield fake
    assert asked == [mirroring.NVTX_DOMAIN]


def test_a_torch_profiler_trace_holds_each_enabled_span_nested_by_group() -> None:
    _set_up("torch")
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        _loop(3)
    events = _annotations(prof)
    names = [event.name for event in events]
    assert names.count(f"{OUTER}/train.step") == 3
    assert names.count(f"{INNER}/fwd") == 3
    assert len(events) == 6  # nothing of the disabled group
    for event in events:
        if event.name == f"{INNER}/fwd":
            assert event.cpu_parent is not None
            assert event.cpu_parent.name == f"{OUTER}/train.step"
        else:
            assert event.cpu_parent is None


def test_spans_of_several_threads_nest_per_thread(domain: _Domain) -> None:
    # Through NVTX: the PyTorch profiler (2.13, CPU) sees only the thread that started it.
    _set_up("nvtx")
    barrier = threading.Barrier(3)

    def work() -> None:
        barrier.wait()
        _loop(50)

    threads = [threading.Thread(target=work) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    per_thread: dict[int, list[tuple[str, Any]]] = {}
    for call in domain.calls:
        per_thread.setdefault(call[2], []).append(call[:2])
    assert len(per_thread) == 3
    for calls in per_thread.values():
        # Each thread's own ranges, closed innermost first: a stack never crossed.
        stack: list[tuple[int, str]] = []
        for kind, value in calls:
            if kind == "start":
                name, category, range_id = value
                assert category == (OUTER if not stack else INNER)
                stack.append((range_id, name))
            else:
                assert stack.pop()[0] == value
        assert not stack
        assert len(calls) == 200


def test_nvtx_ranges_open_in_the_lens_domain_with_the_group_as_category(
    domain: _Domain,
) -> None:
    _set_up("nvtx")
    _loop(2)
    outer = ("train.step", OUTER)
    inner = ("fwd", INNER)
    assert domain.kinds() == [
        ("start", (*outer, 1)),
        ("start", (*inner, 2)),
        ("end", 2),
        ("end", 1),
        ("start", (*outer, 3)),
        ("start", (*inner, 4)),
        ("end", 4),
        ("end", 3),
    ]


def test_both_tools_at_once_and_the_spans_keep_their_parents(domain: _Domain) -> None:
    exporter = InMemorySpanExporter()
    _set_up(" NVTX , torch ", exporter)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        _loop(1)
    assert [event.name for event in _annotations(prof)] == [f"{OUTER}/train.step", f"{INNER}/fwd"]
    assert [call[0] for call in domain.calls] == ["start", "start", "end", "end"]
    core_state.current_handle().shutdown()  # type: ignore[union-attr]
    spans = {span.name: span for span in exporter.get_finished_spans()}
    assert set(spans) == {"train.step", "fwd"}
    assert spans["fwd"].parent is not None
    assert spans["fwd"].parent.span_id == spans["train.step"].context.span_id
    assert dict(spans["train.step"].attributes or {})["iteration"] == 0


def test_a_span_ended_twice_closes_its_ranges_once(domain: _Domain) -> None:
    _set_up("nvtx")
    with managed_span(OUTER, "train.step") as span:
        assert span is not None
    span.end()  # warned about by the span, as before
    assert [call[0] for call in domain.calls] == ["start", "end"]


def test_off_by_default_the_tracer_and_its_spans_are_the_plain_ones() -> None:
    assert NemoLensConfig().profiler == ""
    assert NemoLensConfig().profilers == ()
    _set_up("")
    recorder = core_state.recorder
    assert isinstance(recorder, RecordingTracer)
    assert "start_primitive" not in vars(recorder)
    with managed_span(OUTER, "train.step") as span:
        assert type(span) is RecordingSpan


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_does_not_close_its_parents_ranges(domain: _Domain) -> None:
    _set_up("nvtx")
    read, write = os.pipe()
    with managed_span(OUTER, "train.step"):
        pid = os.fork()
        if pid == 0:  # the child leaves the block too, then reports what it closed
            closed = 0
            try:
                before = len(domain.calls)
                with managed_span(INNER, "fwd"):
                    pass
                closed = len(domain.calls) - before
            finally:
                os.write(write, str(closed).encode())
                os._exit(0)
    os.close(write)
    _, status = os.waitpid(pid, 0)
    reported = os.read(read, 16).decode()
    os.close(read)
    assert status == 0
    # The child's own span opened and closed; the parent's span, ended as the child left
    # the block, closed nothing (2, not 3).
    assert reported == "2"
    assert [call[0] for call in domain.calls] == ["start", "end"]


# -- bad input ----------------------------------------------------------------------------


@pytest.mark.bad_input("profiler-unknown-name")
def test_an_unknown_profiler_names_the_valid_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    expected = (
        "unknown profiler 'nsys' in profiler 'torch,nsys'; use one or more of: "
        f"{', '.join(PROFILERS)}, separated by commas (or leave it empty for none)"
    )
    with pytest.raises(ValueError) as info:
        NemoLensConfig(profiler="torch,nsys")
    assert str(info.value) == expected
    monkeypatch.setenv("NEMO_LENS_PROFILER", "torch,nsys")
    with pytest.raises(ValueError) as info:
        NemoLensConfig.from_env()
    assert str(info.value) == f"NEMO_LENS_PROFILER='torch,nsys': {expected}"


@pytest.mark.bad_input("profiler-package-missing")
@pytest.mark.parametrize("tool", PROFILERS)
def test_a_profiler_whose_package_is_missing_fails_set_up(
    tool: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, tool, None)  # import fails, as uninstalled
    monkeypatch.setitem(sys.modules, f"{tool}.profiler", None)
    with pytest.raises(ImportError) as info:
        _set_up(tool)
    assert str(info.value) == (
        f"the profiler {tool!r} (NemoLensConfig.profiler, NEMO_LENS_PROFILER) needs the "
        f"{tool!r} package, which is not installed; install it with "
        f"pip install 'nemo-lens[{tool}]', or leave {tool!r} out of the profiler setting"
    )
    assert core_state.recorder is None  # nothing installed
