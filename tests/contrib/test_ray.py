"""Ray helpers, tested without Ray: a fake ``.remote`` runs the callee the way a worker
would, with pickled arguments in a fresh, empty context."""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import pickle
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from nemo.lens import managed_span, testing
from nemo.lens.contrib.ray import (
    CARRIER_KWARG,
    extract_ray_context,
    inject_ray_context,
    ray_dispatch_with_context,
    traced_remote_call,
    with_trace_context,
)
from nemo.lens.groups import SpanGroup
from nemo.lens.propagation import continue_trace


class FakeRemote:
    """Stands in for a Ray remote function or actor method."""

    def __init__(self, function: Callable[..., Any], options: dict[str, Any] | None = None):
        self._function = function
        self.options_seen = options or {}
        self.calls: list[tuple[tuple[Any, ...], dict[str, Any]]] = []

    def remote(self, *args: Any, **kwargs: Any) -> Any:
        # Ray validates the call against the callee's signature before sending it.
        inspect.signature(self._function).bind(*args, **kwargs)
        args, kwargs = pickle.loads(pickle.dumps((args, kwargs)))
        self.calls.append((args, kwargs))
        # A worker starts with no OpenTelemetry context at all.
        result = contextvars.Context().run(self._function, *args, **kwargs)
        if inspect.iscoroutine(result):
            result = contextvars.Context().run(asyncio.run, result)
        return result

    def options(self, **options: Any) -> FakeRemote:
        return FakeRemote(self._function, {**self.options_seen, **options})


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    with testing.capture_spans("all") as exporter:
        yield exporter


def _by_name(exporter: InMemorySpanExporter) -> dict[str, ReadableSpan]:
    return {span.name: span for span in exporter.get_finished_spans()}


def _parent_of(child: ReadableSpan, parent: ReadableSpan) -> bool:
    return (
        child.parent is not None
        and parent.context is not None
        and child.parent.span_id == parent.context.span_id
        and child.parent.trace_id == parent.context.trace_id
    )


@traced_remote_call
def rollout(prompt: str, *, temperature: float = 1.0) -> str:
    with managed_span(SpanGroup.STEP, "inner.work"):
        return f"{prompt}@{temperature}"


def test_a_task_continues_the_callers_trace(spans: InMemorySpanExporter) -> None:
    with managed_span(SpanGroup.JOB, "driver"):
        result = with_trace_context(FakeRemote(rollout)).remote("hi", temperature=0.5)
    assert result == "hi@0.5"
    found = _by_name(spans)
    task = found[rollout.__qualname__]
    assert task.kind is SpanKind.SERVER
    assert _parent_of(task, found["driver"])
    assert _parent_of(found["inner.work"], task)


def test_without_dispatch_helper_the_task_starts_its_own_trace(
    spans: InMemorySpanExporter,
) -> None:
    with managed_span(SpanGroup.JOB, "driver"):
        FakeRemote(rollout).remote("hi")  # plain .remote: nothing carried
    found = _by_name(spans)
    assert found[rollout.__qualname__].parent is None


def test_called_directly_it_runs_in_the_current_context(spans: InMemorySpanExporter) -> None:
    with managed_span(SpanGroup.JOB, "driver"):
        assert rollout("x") == "x@1.0"
    found = _by_name(spans)
    assert _parent_of(found[rollout.__qualname__], found["driver"])


class Worker:
    @traced_remote_call(name="worker.step")
    def step(self, batch: list[int]) -> int:
        return sum(batch)

    @traced_remote_call(name="worker.async_step")
    async def async_step(self, batch: list[int]) -> int:
        await asyncio.sleep(0)
        with managed_span(SpanGroup.STEP, "inner.async"):
            return max(batch)


def test_actor_methods_sync_and_async(spans: InMemorySpanExporter) -> None:
    worker = Worker()
    with managed_span(SpanGroup.JOB, "driver"):
        assert with_trace_context(FakeRemote(worker.step)).remote([1, 2, 3]) == 6
        assert ray_dispatch_with_context(FakeRemote(worker.async_step), [4, 9]) == 9
    found = _by_name(spans)
    assert _parent_of(found["worker.step"], found["driver"])
    assert _parent_of(found["worker.async_step"], found["driver"])
    assert _parent_of(found["inner.async"], found["worker.async_step"])


def test_group_gates_the_span_but_not_the_trace(spans: InMemorySpanExporter) -> None:
    @traced_remote_call(group="no_such_group_enabled")
    def gated() -> None:
        with managed_span(SpanGroup.STEP, "inner.gated"):
            pass

    with managed_span(SpanGroup.JOB, "driver"):
        with_trace_context(FakeRemote(gated)).remote()
    found = _by_name(spans)
    assert set(found) == {"driver", "inner.gated"}
    assert _parent_of(found["inner.gated"], found["driver"])


def test_an_exception_is_recorded_and_re_raised(spans: InMemorySpanExporter) -> None:
    @traced_remote_call(name="failing")
    def failing() -> None:
        raise ValueError("bad batch")

    with pytest.raises(ValueError, match="bad batch"), managed_span(SpanGroup.JOB, "driver"):
        with_trace_context(FakeRemote(failing)).remote()
    span = _by_name(spans)["failing"]
    assert span.status.status_code is StatusCode.ERROR
    assert [event.name for event in span.events] == ["exception"]


def test_options_and_an_explicit_carrier(spans: InMemorySpanExporter) -> None:
    fake = FakeRemote(rollout)
    traced = with_trace_context(fake).options(num_gpus=1)
    with managed_span(SpanGroup.JOB, "driver"):
        traced.remote("a")
        carrier = inject_ray_context()
    # Later, outside any span, dispatch under the saved context.
    ray_dispatch_with_context(fake, "b", _carrier=carrier)
    tasks = [s for s in spans.get_finished_spans() if s.name == rollout.__qualname__]
    driver = _by_name(spans)["driver"]
    assert len(tasks) == 2 and all(_parent_of(task, driver) for task in tasks)
    assert fake.calls[0][1][CARRIER_KWARG] == carrier


def test_the_signature_ray_checks_accepts_the_carrier() -> None:
    signature = inspect.signature(rollout)
    assert list(signature.parameters) == ["prompt", "temperature", CARRIER_KWARG]
    signature.bind("p", **{CARRIER_KWARG: {}})
    with pytest.raises(TypeError):
        signature.bind("p", unexpected=1)

    @traced_remote_call
    def open_ended(*args: Any, **kwargs: Any) -> None: ...

    assert list(inspect.signature(open_ended).parameters) == ["args", CARRIER_KWARG, "kwargs"]
    assert rollout.__name__ == "rollout" and rollout.__doc__ is None


def test_extract_ray_context_keeps_the_current_context_on_garbage(
    spans: InMemorySpanExporter,
) -> None:
    with managed_span(SpanGroup.JOB, "driver") as driver:
        assert driver is not None
        junk = extract_ray_context({"traceparent": "junk"})
        with continue_trace(junk), managed_span(SpanGroup.STEP, "inner"):
            pass
    found = _by_name(spans)
    assert _parent_of(found["inner"], found["driver"])


def test_misuse_is_reported_clearly() -> None:
    with pytest.raises(TypeError, match="needs a Ray remote function or actor method"):
        with_trace_context(rollout)
    with pytest.raises(TypeError, match="already has a parameter named '_otel_carrier'"):

        @traced_remote_call
        def clash(_otel_carrier: object) -> None: ...


def test_the_0_1_0_call_form_with_a_tracer(spans: InMemorySpanExporter) -> None:
    own = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(own))

    def plain(x: int) -> int:
        return x + 1

    wrapped = traced_remote_call(plain, provider.get_tracer("mine"))
    with managed_span(SpanGroup.JOB, "driver"):
        assert ray_dispatch_with_context(FakeRemote(wrapped), 1) == 2
    (task,) = own.get_finished_spans()  # the given tracer's provider got it
    assert task.name == plain.__qualname__
    assert _parent_of(task, _by_name(spans)["driver"])
