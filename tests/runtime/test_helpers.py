"""The instrumentation primitives, judged by the spans that reach an in-memory exporter."""

from __future__ import annotations

import asyncio
import functools
import inspect
import time
from collections.abc import AsyncIterator, Callable, Generator, Iterator, Sequence
from typing import Any, Final

import pytest
from hypothesis import given
from hypothesis import strategies as st
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import Decision, Sampler, SamplingResult
from opentelemetry.trace import Link, NonRecordingSpan, SpanKind, StatusCode, Tracer
from opentelemetry.util._once import Once

import nemo.lens
from nemo.lens import fallbacks, semconv
from nemo.lens._core import state as core_state
from nemo.lens.groups import DynamicSpanGroup, SpanGroup
from nemo.lens.helpers import (
    DEFAULT_REDACT_KEYS,
    managed_span,
    redact_value,
    safe_set_span_attributes,
    span_cm,
    trace_fn,
)
from nemo.lens.state import set_enabled_span_groups

STEP: Final = SpanGroup.STEP


# --- doubles and small tools --------------------------------------------------------------------


class ExplodingTracer(Tracer):
    """A tracer that fails the test if a disabled primitive ever reaches it."""

    def start_span(self, *args: Any, **kwargs: Any) -> trace.Span:
        raise AssertionError("a disabled primitive started a span")

    def start_as_current_span(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a disabled primitive started a span")


class CountingProvider(TracerProvider):
    """An SDK provider that exports in memory and counts tracer look-ups."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.exporter = InMemorySpanExporter()
        self.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.lookups = 0

    def get_tracer(self, *args: Any, **kwargs: Any) -> Tracer:
        self.lookups += 1
        return super().get_tracer(*args, **kwargs)

    def names(self) -> list[str]:
        return [span.name for span in self.exporter.get_finished_spans()]


class AttributeRecordingSampler(Sampler):
    """Records the attributes each span is started with, then samples it."""

    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []

    def should_sample(
        self,
        parent_context: Context | None,
        trace_id: int,
        name: str,
        kind: SpanKind | None = None,
        attributes: Any = None,
        links: Sequence[Link] | None = None,
        trace_state: Any = None,
    ) -> SamplingResult:
        self.seen.append(dict(attributes or {}))
        return SamplingResult(Decision.RECORD_AND_SAMPLE, attributes)

    def get_description(self) -> str:
        return "AttributeRecordingSampler"


def only(exporter: InMemorySpanExporter, name: str) -> ReadableSpan:
    matching = [span for span in exporter.get_finished_spans() if span.name == name]
    assert len(matching) == 1, [span.name for span in exporter.get_finished_spans()]
    return matching[0]


def parent_id(span: ReadableSpan) -> int | None:
    return None if span.parent is None else span.parent.span_id


def span_id(span: ReadableSpan) -> int:
    assert span.context is not None
    result: int = span.context.span_id
    return result


def current_span_id() -> int:
    return trace.get_current_span().get_span_context().span_id


@pytest.fixture
def global_provider(monkeypatch: pytest.MonkeyPatch) -> Callable[[TracerProvider | None], None]:
    """Set OpenTelemetry's global tracer provider as a user would, restored after the test."""
    monkeypatch.setattr(trace, "_TRACER_PROVIDER", None)
    monkeypatch.setattr(trace, "_TRACER_PROVIDER_SET_ONCE", Once())

    def install(provider: TracerProvider | None) -> None:
        if provider is None:
            monkeypatch.setattr(trace, "_TRACER_PROVIDER", None)
            return
        # set_tracer_provider works once per process; reopen it as a fresh process would be.
        monkeypatch.setattr(trace, "_TRACER_PROVIDER_SET_ONCE", Once())
        trace.set_tracer_provider(provider)

    return install


# --- managed_span -------------------------------------------------------------------------------


def test_enabled_managed_span_exports_the_span_with_its_attributes(
    spans: InMemorySpanExporter,
) -> None:
    with managed_span(
        STEP,
        "train.step",
        iteration=3,
        lr=0.5,
        warmup=True,
        phase="train",
        skipped=None,
        prompt="tell me a secret",
        ranks=[0, 1],
        blob={"not": "allowed"},
    ) as span:
        assert span is not None
        assert span.is_recording()
        assert trace.get_current_span() is span

    exported = only(spans, "train.step")
    assert exported.kind is SpanKind.INTERNAL
    assert dict(exported.attributes or {}) == {
        "iteration": 3,
        "lr": 0.5,
        "warmup": True,
        "phase": "train",
        "prompt": "[REDACTED]",
        "ranks": (0, 1),
        semconv.SPAN_GROUP: "step",
        semconv.SPAN_CATEGORY: SpanGroup.categories()[STEP],
    }
    assert exported.status.status_code is StatusCode.UNSET


def test_managed_span_takes_a_kind_and_links(spans: InMemorySpanExporter) -> None:
    with span_cm("remote.origin") as origin:
        pass
    link = Link(origin.get_span_context(), {"link.reason": "batch"})

    with managed_span(STEP, "serve.request", kind=SpanKind.SERVER, links=[link]):
        pass

    exported = only(spans, "serve.request")
    assert exported.kind is SpanKind.SERVER
    assert [linked.context.span_id for linked in exported.links] == [
        origin.get_span_context().span_id
    ]
    assert dict(exported.links[0].attributes or {}) == {"link.reason": "batch"}
    # A link is not a parent.
    assert exported.parent is None


def test_nested_managed_spans_are_parent_and_child(spans: InMemorySpanExporter) -> None:
    with managed_span(SpanGroup.JOB, "job"), managed_span(STEP, "step"):
        pass

    job, step = only(spans, "job"), only(spans, "step")
    assert parent_id(step) == span_id(job)
    assert step.context is not None and job.context is not None
    assert step.context.trace_id == job.context.trace_id
    assert job.parent is None


def test_attributes_are_redacted_before_the_sampler_sees_them() -> None:
    sampler = AttributeRecordingSampler()
    provider = CountingProvider(sampler=sampler)
    tracer = provider.get_tracer("test")
    set_enabled_span_groups([STEP])

    with managed_span(STEP, "generate", tracer, prompt="hello", tokens=7, junk=object()):
        pass

    assert sampler.seen == [
        {
            "prompt": "[REDACTED]",
            "tokens": 7,
            semconv.SPAN_GROUP: "step",
            semconv.SPAN_CATEGORY: SpanGroup.categories()[STEP],
        }
    ]
    assert provider.names() == ["generate"]


def test_an_exception_is_recorded_as_an_error_and_reraised(spans: InMemorySpanExporter) -> None:
    before = current_span_id()

    with pytest.raises(ValueError, match="boom"), managed_span(STEP, "step"):
        raise ValueError("boom")

    exported = only(spans, "step")
    assert exported.status.status_code is StatusCode.ERROR
    assert exported.status.description == "ValueError: boom"
    (event,) = exported.events
    assert event.name == "exception"
    assert dict(event.attributes or {})["exception.type"] == "ValueError"
    assert dict(event.attributes or {})["exception.message"] == "boom"
    assert exported.end_time is not None
    assert current_span_id() == before


class _Unprintable(Exception):
    """An exception whose ``__str__`` raises (a bug of its own, but the job's exception)."""

    def __str__(self) -> str:
        raise RuntimeError("__str__ is broken")


def _raise_through(how: str, error: BaseException) -> None:
    if how == "managed_span":
        with managed_span(STEP, "step"):
            raise error
    elif how == "span_cm":
        with span_cm("step"):
            raise error
    elif how == "trace_fn":

        @trace_fn(STEP, "step")
        def step() -> None:
            raise error

        step()
    else:

        @trace_fn(STEP, "step")
        def steps() -> Iterator[int]:
            yield 1
            raise error

        list(steps())


@pytest.mark.parametrize("how", ["managed_span", "span_cm", "trace_fn", "generator"])
def test_an_exception_whose_str_raises_reaches_the_caller_unchanged(
    spans: InMemorySpanExporter, how: str
) -> None:
    # The SDK's record_exception calls str() on it: its RuntimeError used to
    # replace the job's own exception, and the span got no ERROR status.
    error = _Unprintable()
    with pytest.raises(_Unprintable) as raised:
        _raise_through(how, error)
    assert raised.value is error
    exported = only(spans, "step")
    stand_in = "<exception str() failed: RuntimeError>"
    assert exported.status.status_code is StatusCode.ERROR
    assert exported.status.description == f"_Unprintable: {stand_in}"
    (event,) = exported.events
    attributes = dict(event.attributes or {})
    assert event.name == "exception"
    assert attributes["exception.type"] == f"{__name__}._Unprintable"
    assert attributes["exception.message"] == stand_in
    assert "Traceback" in str(attributes["exception.stacktrace"])
    assert "raise error" in str(attributes["exception.stacktrace"])


@pytest.mark.parametrize("interrupt", [KeyboardInterrupt, SystemExit, GeneratorExit])
def test_a_base_exception_ends_the_span_without_marking_an_error(
    spans: InMemorySpanExporter, interrupt: type[BaseException]
) -> None:
    before = current_span_id()

    with pytest.raises(interrupt), managed_span(STEP, "step"):
        raise interrupt()

    exported = only(spans, "step")
    assert exported.end_time is not None
    assert exported.status.status_code is StatusCode.UNSET
    assert exported.events == ()
    assert current_span_id() == before


def test_disabled_managed_span_yields_none_and_touches_no_opentelemetry(
    spans: InMemorySpanExporter, monkeypatch: pytest.MonkeyPatch
) -> None:
    set_enabled_span_groups([SpanGroup.JOB])

    def forbidden(*args: object, **kwargs: object) -> Any:
        raise AssertionError("OpenTelemetry was touched on the disabled path")

    monkeypatch.setattr(otel_context, "attach", forbidden)
    monkeypatch.setattr(core_state, "default_tracer", forbidden)
    ran = []

    with managed_span(STEP, "step", ExplodingTracer(), iteration=1) as span:
        ran.append(span)
    with managed_span(STEP, "step") as span:
        ran.append(span)

    assert ran == [None, None]
    assert spans.get_finished_spans() == ()


def test_disabled_managed_span_is_one_shared_object_and_lets_exceptions_through() -> None:
    first = managed_span(STEP, "a")
    second = managed_span(SpanGroup.OPTIMIZER, "b", ExplodingTracer(), kind=SpanKind.CLIENT, x=1)

    assert first is second
    with pytest.raises(ValueError, match="still raised"), first:
        raise ValueError("still raised")


def test_an_unknown_group_is_disabled(spans: InMemorySpanExporter) -> None:
    with managed_span(DynamicSpanGroup("no_such_group"), "x", ExplodingTracer()) as span:
        assert span is None

    assert spans.get_finished_spans() == ()


def test_an_explicit_tracer_is_used_instead_of_the_default(spans: InMemorySpanExporter) -> None:
    other = CountingProvider()

    with managed_span(STEP, "explicit", other.get_tracer("mine")):
        pass

    assert other.names() == ["explicit"]
    assert spans.get_finished_spans() == ()


def test_managed_span_keeps_the_reference_parameter_order() -> None:
    parameters = inspect.signature(managed_span).parameters
    P = inspect.Parameter

    assert [(p.name, p.kind) for p in parameters.values()] == [
        ("group", P.POSITIONAL_OR_KEYWORD),
        ("name", P.POSITIONAL_OR_KEYWORD),
        ("tracer", P.POSITIONAL_OR_KEYWORD),
        ("kind", P.KEYWORD_ONLY),
        ("links", P.KEYWORD_ONLY),
        ("attributes", P.VAR_KEYWORD),
    ]


def test_gated_spans_carry_their_group_as_an_attribute(spans: InMemorySpanExporter) -> None:
    # nemo-lens summarize/convert group spans by this attribute; every gated path sets it.
    group: Final = SpanGroup.CHECKPOINT

    @trace_fn(group, "mirrored")
    def mirrored(x: int) -> int:
        return x

    @trace_fn(group, "coroutine")
    async def coroutine() -> None:
        return None

    @trace_fn(group, "generator")
    def generator() -> Iterator[int]:
        yield 1

    @trace_fn(group, "async_generator")
    async def async_generator() -> AsyncIterator[int]:
        yield 1

    async def drain() -> None:
        await coroutine()
        async for _ in async_generator():
            pass

    # A caller's own attribute of that name does not override the group.
    forged: dict[str, Any] = {semconv.SPAN_GROUP: "forged"}
    with managed_span(group, "managed", **forged):
        pass
    mirrored(1)
    trace_fn(group, "unmirrored")(functools.partial(int, "7"))()
    list(generator())
    asyncio.run(drain())

    labelled = {
        span.name: (span.attributes or {}).get(semconv.SPAN_GROUP)
        for span in spans.get_finished_spans()
    }
    assert labelled == dict.fromkeys(
        ["managed", "mirrored", "unmirrored", "generator", "coroutine", "async_generator"],
        "checkpoint",
    )


# --- span_cm ------------------------------------------------------------------------------------


def test_span_cm_emits_whatever_groups_are_enabled(spans: InMemorySpanExporter) -> None:
    set_enabled_span_groups([])

    with span_cm("always", epoch=2, password="hunter2") as span:
        assert span.is_recording()
        assert trace.get_current_span() is span

    exported = only(spans, "always")
    assert dict(exported.attributes or {}) == {"epoch": 2, "password": "[REDACTED]"}


@pytest.mark.parametrize(("record", "events"), [(True, ["exception"]), (False, [])])
def test_span_cm_record_exception_controls_the_event_not_the_status(
    spans: InMemorySpanExporter, record: bool, events: list[str]
) -> None:
    with pytest.raises(RuntimeError), span_cm("fails", record_exception=record):
        raise RuntimeError("bad")

    exported = only(spans, "fails")
    assert exported.status.status_code is StatusCode.ERROR
    assert [event.name for event in exported.events] == events


def test_span_cm_yields_a_non_recording_span_without_any_provider(
    global_provider: Callable[[TracerProvider | None], None],
) -> None:
    with span_cm("nowhere") as span:
        assert span is not None
        assert not span.is_recording()


# --- trace_fn: plain functions ------------------------------------------------------------------


def test_trace_fn_traces_each_call_under_the_current_span(spans: InMemorySpanExporter) -> None:
    inside: list[int] = []

    @trace_fn(STEP, "compute")
    def compute(a: int, *, b: int) -> int:
        inside.append(current_span_id())
        return a + b

    with span_cm("caller"):
        assert compute(2, b=3) == 5

    exported, caller = only(spans, "compute"), only(spans, "caller")
    assert parent_id(exported) == span_id(caller)
    assert inside == [span_id(exported)]


def test_disabled_trace_fn_calls_through_without_the_tracer(spans: InMemorySpanExporter) -> None:
    set_enabled_span_groups([])

    @trace_fn(STEP, "compute", ExplodingTracer())
    def compute(a: int) -> int:
        return a * 2

    assert compute(21) == 42
    assert spans.get_finished_spans() == ()


def test_trace_fn_checks_the_group_at_call_time(spans: InMemorySpanExporter) -> None:
    set_enabled_span_groups([])

    @trace_fn(STEP, "work")
    def work() -> None:
        pass

    work()
    set_enabled_span_groups([STEP])
    work()
    set_enabled_span_groups([])
    work()

    assert [span.name for span in spans.get_finished_spans()] == ["work"]


def test_trace_fn_records_an_exception_and_reraises(spans: InMemorySpanExporter) -> None:
    @trace_fn(STEP, "explode")
    def explode() -> None:
        raise KeyError("missing")

    with pytest.raises(KeyError):
        explode()

    exported = only(spans, "explode")
    assert exported.status.status_code is StatusCode.ERROR
    assert [event.name for event in exported.events] == ["exception"]


def _every_kind(
    a: Any, b: Any = 1, /, c: Any = 2, *args: Any, d: Any, e: Any = 5, **kw: Any
) -> Any:
    return (a, b, c, args, d, e, kw)


def _keyword_only(*, x: Any, y: Any = "y") -> Any:
    return (x, y)


def _shared_default(items: list[int] = []) -> list[int]:  # noqa: B006 - identity is the point
    return items


def _reserved_name(_nl_fn: Any, *rest: Any) -> Any:
    return (_nl_fn, rest)


class _CallableObject:
    def __call__(self, x: Any, y: Any = 0) -> Any:
        return (x, y)


_CALLS: list[tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]] = [
    (_every_kind, (0,), {"d": 4}),
    (_every_kind, (0, 1, 2, 3, 3), {"d": 4, "e": 6, "z": 7}),
    (_every_kind, (0,), {"c": 9, "d": 4}),
    (_every_kind, (), {"a": 0, "d": 4}),  # a is positional-only: TypeError
    (_every_kind, (0,), {}),  # d is required: TypeError
    (_keyword_only, (), {"x": 1}),
    (_keyword_only, (1,), {}),  # TypeError
    (_reserved_name, (1, 2), {}),
    (_CallableObject(), (1,), {"y": 2}),
    (functools.partial(_keyword_only, x=3), (), {}),
    (len, ([1, 2],), {}),
]


@pytest.mark.parametrize("enabled", [False, True], ids=["disabled", "enabled"])
@pytest.mark.parametrize(("fn", "args", "kwargs"), _CALLS)
def test_a_traced_function_binds_arguments_exactly_like_the_original(
    spans: InMemorySpanExporter,
    enabled: bool,
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> None:
    set_enabled_span_groups([STEP] if enabled else [])
    traced = trace_fn(STEP, "bound")(fn)

    try:
        expected = fn(*args, **kwargs)
    except TypeError as error:
        with pytest.raises(TypeError) as raised:
            traced(*args, **kwargs)
        if inspect.isfunction(fn):
            assert str(raised.value) == str(error)
    else:
        assert traced(*args, **kwargs) == expected
        assert len(spans.get_finished_spans()) == (1 if enabled else 0)


def test_a_traced_function_gets_the_same_default_objects() -> None:
    traced = trace_fn(STEP, "defaults")(_shared_default)

    assert traced() is _shared_default()


def _plain() -> None:
    """Plain doc."""


async def _coroutine() -> None:
    """Coroutine doc."""


def _generator() -> Iterator[int]:
    """Generator doc."""
    yield 1


async def _async_generator() -> AsyncIterator[int]:
    """Async generator doc."""
    yield 1


@pytest.mark.parametrize(
    ("fn", "check"),
    [
        (_plain, inspect.isfunction),
        (_coroutine, inspect.iscoroutinefunction),
        (_generator, inspect.isgeneratorfunction),
        (_async_generator, inspect.isasyncgenfunction),
    ],
    ids=["function", "coroutine", "generator", "async-generator"],
)
def test_trace_fn_keeps_metadata_and_the_kind_of_function(
    fn: Callable[..., Any], check: Callable[[object], bool]
) -> None:
    wrapped = trace_fn(STEP, "x")(fn)

    assert wrapped is not fn
    assert check(wrapped)
    assert wrapped.__name__ == fn.__name__
    assert wrapped.__qualname__ == fn.__qualname__
    assert wrapped.__doc__ == fn.__doc__
    assert wrapped.__wrapped__ is fn  # type: ignore[attr-defined]
    assert inspect.signature(wrapped) == inspect.signature(fn)


# --- trace_fn: coroutines -----------------------------------------------------------------------


def test_trace_fn_covers_the_awaited_run_of_a_coroutine(spans: InMemorySpanExporter) -> None:
    inside: list[int] = []

    @trace_fn(STEP, "fetch")
    async def fetch(x: int) -> int:
        await asyncio.sleep(0.05)
        inside.append(current_span_id())
        with span_cm("fetch.child"):
            pass
        return x + 1

    async def main() -> tuple[int, int, int]:
        coroutine = fetch(1)
        await asyncio.sleep(0.02)  # created but not yet running: no span may cover this
        awaited_at = time.time_ns()
        result = await coroutine
        return result, awaited_at, time.time_ns()

    result, awaited_at, done_at = asyncio.run(main())

    exported, child = only(spans, "fetch"), only(spans, "fetch.child")
    assert result == 2
    assert exported.start_time is not None and exported.end_time is not None
    assert awaited_at <= exported.start_time
    assert exported.end_time - exported.start_time >= 50_000_000
    assert exported.end_time <= done_at
    assert parent_id(child) == span_id(exported)
    assert inside == [span_id(exported)]


def test_concurrent_traced_coroutines_each_parent_their_own_children(
    spans: InMemorySpanExporter,
) -> None:
    @trace_fn(STEP, "task")
    async def task(label: str) -> None:
        await asyncio.sleep(0.01)
        with span_cm(f"child.{label}"):
            await asyncio.sleep(0.01)

    async def main() -> None:
        await asyncio.gather(task("a"), task("b"), task("c"))

    asyncio.run(main())

    tasks = {span_id(span) for span in spans.get_finished_spans() if span.name == "task"}
    assert len(tasks) == 3
    parents = {parent_id(only(spans, f"child.{label}")) for label in "abc"}
    assert parents == tasks


def test_trace_fn_records_a_coroutine_exception(spans: InMemorySpanExporter) -> None:
    @trace_fn(STEP, "fail")
    async def fail() -> None:
        await asyncio.sleep(0)
        raise ValueError("async boom")

    with pytest.raises(ValueError, match="async boom"):
        asyncio.run(fail())

    exported = only(spans, "fail")
    assert exported.status.description == "ValueError: async boom"


def test_disabled_trace_fn_awaits_a_coroutine_without_the_tracer(
    spans: InMemorySpanExporter,
) -> None:
    set_enabled_span_groups([])

    @trace_fn(STEP, "fetch", ExplodingTracer())
    async def fetch() -> str:
        await asyncio.sleep(0)
        return "ok"

    assert asyncio.run(fetch()) == "ok"
    assert spans.get_finished_spans() == ()


# --- trace_fn: generators -----------------------------------------------------------------------


def test_a_traced_generator_span_covers_iteration_until_exhaustion(
    spans: InMemorySpanExporter,
) -> None:
    body_spans: list[int] = []

    @trace_fn(STEP, "batches")
    def batches(n: int) -> Iterator[int]:
        for i in range(n):
            body_spans.append(current_span_id())
            with span_cm(f"batch.{i}"):
                pass
            yield i

    with span_cm("consumer") as consumer:
        consumer_id = consumer.get_span_context().span_id
        iterator = batches(3)
        assert spans.get_finished_spans() == ()  # calling starts nothing
        received = []
        for item in iterator:
            received.append(item)
            # Between items the consumer's own span is current, never the generator's.
            assert current_span_id() == consumer_id
            if item == 1:
                time.sleep(0.03)
                assert "batches" not in [span.name for span in spans.get_finished_spans()]

    exported = only(spans, "batches")
    assert received == [0, 1, 2]
    assert parent_id(exported) == consumer_id
    assert body_spans == [span_id(exported)] * 3
    assert {parent_id(only(spans, f"batch.{i}")) for i in range(3)} == {span_id(exported)}
    assert exported.start_time is not None and exported.end_time is not None
    assert exported.end_time - exported.start_time >= 30_000_000
    assert exported.status.status_code is StatusCode.UNSET


def test_a_traced_generator_forwards_send_throw_and_its_return_value(
    spans: InMemorySpanExporter,
) -> None:
    @trace_fn(STEP, "echo")
    def echo() -> Generator[str, str, str]:
        received = yield "ready"
        while received != "stop":
            try:
                received = yield f"echo:{received}"
            except ValueError as error:
                received = yield f"caught:{error}"
        return "finished"

    def consume() -> Generator[str, str, None]:
        result = yield from echo()
        yield f"returned:{result}"

    consumer = consume()
    assert next(consumer) == "ready"
    assert consumer.send("a") == "echo:a"
    assert consumer.throw(ValueError("oops")) == "caught:oops"
    assert consumer.send("b") == "echo:b"
    assert consumer.send("stop") == "returned:finished"

    exported = only(spans, "echo")
    assert exported.status.status_code is StatusCode.UNSET


def test_closing_a_traced_generator_early_ends_its_span_without_error(
    spans: InMemorySpanExporter,
) -> None:
    cleanup_spans: list[int] = []

    @trace_fn(STEP, "stream")
    def stream() -> Generator[int, None, None]:
        try:
            yield 1
            yield 2
        finally:
            cleanup_spans.append(current_span_id())

    iterator = stream()
    assert next(iterator) == 1
    assert spans.get_finished_spans() == ()
    iterator.close()

    exported = only(spans, "stream")
    assert exported.status.status_code is StatusCode.UNSET
    assert exported.events == ()
    assert cleanup_spans == [span_id(exported)]


def test_an_exception_inside_a_traced_generator_is_recorded(spans: InMemorySpanExporter) -> None:
    @trace_fn(STEP, "broken")
    def broken() -> Iterator[int]:
        yield 1
        raise RuntimeError("mid-stream")

    with pytest.raises(RuntimeError, match="mid-stream"):
        list(broken())

    exported = only(spans, "broken")
    assert exported.status.description == "RuntimeError: mid-stream"


def test_an_exception_thrown_in_and_not_handled_is_recorded(spans: InMemorySpanExporter) -> None:
    @trace_fn(STEP, "plain")
    def plain() -> Generator[int, None, None]:
        yield 1
        yield 2

    iterator = plain()
    next(iterator)
    with pytest.raises(LookupError, match="from outside"):
        iterator.throw(LookupError("from outside"))

    exported = only(spans, "plain")
    assert exported.status.description == "LookupError: from outside"


def test_disabled_trace_fn_passes_a_generator_through(spans: InMemorySpanExporter) -> None:
    set_enabled_span_groups([])

    @trace_fn(STEP, "echo", ExplodingTracer())
    def echo() -> Generator[int, int, int]:
        total = 0
        while total < 10:
            total += yield total
        return total

    def consume() -> Generator[int, int, None]:
        result = yield from echo()
        yield -result

    consumer = consume()
    assert next(consumer) == 0
    assert consumer.send(4) == 4
    assert consumer.send(7) == -11
    assert spans.get_finished_spans() == ()


# --- trace_fn: async generators -----------------------------------------------------------------


def test_a_traced_async_generator_span_covers_iteration_until_exhaustion(
    spans: InMemorySpanExporter,
) -> None:
    body_spans: list[int] = []

    @trace_fn(STEP, "rollouts")
    async def rollouts(n: int) -> AsyncIterator[int]:
        for i in range(n):
            await asyncio.sleep(0)
            body_spans.append(current_span_id())
            with span_cm(f"rollout.{i}"):
                pass
            yield i

    async def main() -> tuple[list[int], int, list[str]]:
        received = []
        finished_midway: list[str] = []
        with span_cm("consumer") as consumer:
            consumer_id = consumer.get_span_context().span_id
            async for item in rollouts(3):
                received.append(item)
                assert current_span_id() == consumer_id
                if item == 1:
                    await asyncio.sleep(0.03)
                    finished_midway = [span.name for span in spans.get_finished_spans()]
        return received, consumer_id, finished_midway

    received, consumer_id, finished_midway = asyncio.run(main())

    exported = only(spans, "rollouts")
    assert received == [0, 1, 2]
    assert "rollouts" not in finished_midway
    assert parent_id(exported) == consumer_id
    assert body_spans == [span_id(exported)] * 3
    assert {parent_id(only(spans, f"rollout.{i}")) for i in range(3)} == {span_id(exported)}
    assert exported.start_time is not None and exported.end_time is not None
    assert exported.end_time - exported.start_time >= 30_000_000


def test_a_traced_async_generator_forwards_asend_athrow_and_aclose(
    spans: InMemorySpanExporter,
) -> None:
    closed_under: list[int] = []

    @trace_fn(STEP, "agen")
    async def agen() -> Any:
        try:
            received = yield "ready"
            while True:
                try:
                    received = yield f"echo:{received}"
                except ValueError as error:
                    received = yield f"caught:{error}"
        finally:
            closed_under.append(current_span_id())

    async def main() -> list[str]:
        iterator = agen()
        seen = [await iterator.asend(None)]
        seen.append(await iterator.asend("a"))
        seen.append(await iterator.athrow(ValueError("oops")))
        seen.append(await iterator.asend("b"))
        assert spans.get_finished_spans() == ()
        await iterator.aclose()
        return seen

    assert asyncio.run(main()) == ["ready", "echo:a", "caught:oops", "echo:b"]

    exported = only(spans, "agen")
    assert exported.status.status_code is StatusCode.UNSET
    assert closed_under == [span_id(exported)]


def test_an_exception_inside_a_traced_async_generator_is_recorded(
    spans: InMemorySpanExporter,
) -> None:
    @trace_fn(STEP, "abroken")
    async def abroken() -> AsyncIterator[int]:
        yield 1
        raise RuntimeError("async mid-stream")

    async def main() -> None:
        async for _ in abroken():
            pass

    with pytest.raises(RuntimeError, match="async mid-stream"):
        asyncio.run(main())

    exported = only(spans, "abroken")
    assert exported.status.description == "RuntimeError: async mid-stream"


def test_disabled_trace_fn_passes_an_async_generator_through(
    spans: InMemorySpanExporter,
) -> None:
    set_enabled_span_groups([])

    @trace_fn(STEP, "agen", ExplodingTracer())
    async def agen() -> Any:
        received = yield 0
        yield received * 2

    async def main() -> list[int]:
        iterator = agen()
        first = await iterator.asend(None)
        second = await iterator.asend(21)
        with pytest.raises(StopAsyncIteration):
            await iterator.asend(None)
        return [first, second]

    assert asyncio.run(main()) == [0, 42]
    assert spans.get_finished_spans() == ()


# --- the default tracer -------------------------------------------------------------------------


def test_the_default_tracer_is_looked_up_once_not_per_call() -> None:
    provider = CountingProvider()
    core_state.use_tracer_provider(provider)
    set_enabled_span_groups([STEP])

    for _ in range(5):
        with managed_span(STEP, "step"):
            pass

    assert provider.lookups == 1
    assert provider.names() == ["step"] * 5


def test_the_default_tracer_follows_the_installed_provider() -> None:
    first, second = CountingProvider(), CountingProvider()
    set_enabled_span_groups([STEP])

    core_state.use_tracer_provider(first)
    with managed_span(STEP, "one"):
        pass
    core_state.use_tracer_provider(second)
    with managed_span(STEP, "two"):
        pass

    assert first.names() == ["one"]
    assert second.names() == ["two"]


def test_the_default_tracer_has_the_nemo_lens_scope(spans: InMemorySpanExporter) -> None:
    with managed_span(STEP, "scoped"):
        pass

    scope = only(spans, "scoped").instrumentation_scope
    assert scope is not None
    assert (scope.name, scope.version) == ("nemo.lens", nemo.lens.__version__)


def test_without_set_up_the_default_tracer_follows_the_global_provider(
    global_provider: Callable[[TracerProvider | None], None],
) -> None:
    set_enabled_span_groups([STEP])
    with managed_span(STEP, "before") as span:
        assert span is not None and not span.is_recording()

    first = CountingProvider()
    global_provider(first)
    for _ in range(3):
        with managed_span(STEP, "global.one"):
            pass

    second = CountingProvider()
    global_provider(second)
    with managed_span(STEP, "global.two"):
        pass

    assert first.names() == ["global.one"] * 3
    assert first.lookups == 1
    assert second.names() == ["global.two"]


def test_an_installed_provider_wins_over_the_global_one_until_removed(
    global_provider: Callable[[TracerProvider | None], None],
) -> None:
    global_one, installed = CountingProvider(), CountingProvider()
    global_provider(global_one)
    set_enabled_span_groups([STEP])

    core_state.use_tracer_provider(installed)
    with managed_span(STEP, "installed"):
        pass
    core_state.use_tracer_provider(None)
    with managed_span(STEP, "global"):
        pass

    assert installed.names() == ["installed"]
    assert global_one.names() == ["global"]


# --- safe_set_span_attributes and redact_value --------------------------------------------------


class RefusingSpan(NonRecordingSpan):
    """A non-recording span that fails the test if attributes are set on it."""

    def set_attribute(self, key: str, value: Any) -> None:
        raise AssertionError("attribute set on a non-recording span")

    def set_attributes(self, attributes: Any) -> None:
        raise AssertionError("attributes set on a non-recording span")


def test_nothing_is_set_on_a_missing_or_non_recording_span() -> None:
    safe_set_span_attributes(None, {"a": 1})
    safe_set_span_attributes(RefusingSpan(trace.INVALID_SPAN_CONTEXT), {"a": 1})


def set_and_read(
    spans: InMemorySpanExporter, attributes: dict[str, Any], **kwargs: Any
) -> dict[str, Any]:
    with span_cm("target") as span:
        safe_set_span_attributes(span, attributes, **kwargs)
    exported = only(spans, "target")
    spans.clear()
    return dict(exported.attributes or {})


def test_only_values_opentelemetry_can_carry_are_set(spans: InMemorySpanExporter) -> None:
    got = set_and_read(
        spans,
        {
            "flag": False,
            "count": 0,
            "ratio": 0.25,
            "label": "",
            "none": None,
            "ints": [1, 2],
            "names": ("a", "b"),
            "empty": [],
            "mixed": [1, "a"],
            "bools_and_ints": [True, 1],
            "nested": [[1]],
            "with_none": [1, None],
            "mapping": {"a": 1},
            "raw": b"bytes",
            "thing": object(),
        },
    )

    assert got == {
        "flag": False,
        "count": 0,
        "ratio": 0.25,
        "label": "",
        "ints": (1, 2),
        "names": ("a", "b"),
        "empty": (),
    }


@pytest.mark.parametrize(
    "key", ["prompt", "PROMPT", "Input_Text", "llm.prompt", "gen_ai.Output_Text", "api.key", "text"]
)
def test_text_under_a_redact_key_is_redacted(spans: InMemorySpanExporter, key: str) -> None:
    assert set_and_read(spans, {key: "private"}) == {key: "[REDACTED]"}


@pytest.mark.parametrize(
    "key", ["prompt_tokens", "cache_key", "prompt.length", "keyboard", "tokens", "context"]
)
def test_keys_that_only_resemble_redact_keys_are_kept(
    spans: InMemorySpanExporter, key: str
) -> None:
    assert set_and_read(spans, {key: "visible"}) == {key: "visible"}


def test_redaction_covers_string_lists_but_not_numbers(spans: InMemorySpanExporter) -> None:
    got = set_and_read(spans, {"prompt": ["a", "b"], "token": 5, "token_ids": [1, 2]})

    assert got == {"prompt": ("[REDACTED]", "[REDACTED]"), "token": 5, "token_ids": (1, 2)}


def test_custom_redact_keys_replace_the_defaults_and_ignore_case(
    spans: InMemorySpanExporter,
) -> None:
    got = set_and_read(
        spans, {"user.email": "a@b.c", "prompt": "shown"}, redact_keys=frozenset({"Email"})
    )

    assert got == {"user.email": "[REDACTED]", "prompt": "shown"}


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("prompt", "secret", "[REDACTED]"),
        ("LLM.Prompt", "secret", "[REDACTED]"),
        ("prompt", ["a", 1], ["[REDACTED]", 1]),
        ("prompt", ("a", "b"), ("[REDACTED]", "[REDACTED]")),
        ("token", 42, 42),
        ("prompt_tokens", "visible", "visible"),
        ("label", "visible", "visible"),
    ],
)
def test_redact_value(key: str, value: object, expected: object) -> None:
    assert redact_value(key, value) == expected
    assert type(redact_value(key, value)) is type(expected)


def test_redact_value_with_custom_keys() -> None:
    assert redact_value("Session.ID", "abc", frozenset({"session.id", "id"})) == "[REDACTED]"
    assert redact_value("prompt", "abc", frozenset({"id"})) == "abc"


def test_the_default_redact_keys_are_the_documented_ones() -> None:
    assert DEFAULT_REDACT_KEYS == frozenset(
        {"prompt", "input_text", "output_text", "text", "password", "token", "secret", "key"}
        | {"api_key", "access_token", "authorization", "hf_token", "aws_secret_access_key"}
    )
    assert fallbacks.DEFAULT_REDACT_KEYS == DEFAULT_REDACT_KEYS


_key_parts = st.sampled_from(
    [*DEFAULT_REDACT_KEYS, "Prompt", "TOKEN", "llm", "gen_ai", "prompt_tokens", "x", ""]
)
_keys = st.lists(_key_parts, min_size=1, max_size=3).map(".".join)
_values = st.one_of(
    st.text(max_size=5),
    st.integers(),
    st.none(),
    st.lists(st.one_of(st.text(max_size=3), st.integers()), max_size=3),
    st.lists(st.text(max_size=3), max_size=3).map(tuple),
)


@given(key=_keys, value=_values)
def test_the_fallback_redacts_exactly_like_the_real_helper(key: str, value: object) -> None:
    assert fallbacks.redact_value(key, value) == redact_value(key, value)
    custom = frozenset({"Llm", "x"})
    assert fallbacks.redact_value(key, value, custom) == redact_value(key, value, custom)


def test_a_kind_that_is_not_a_span_kind_is_rejected_at_the_call(
    spans: InMemorySpanExporter,
) -> None:
    with pytest.raises(TypeError, match=r"takes an opentelemetry.trace.SpanKind .* got 'server'"):
        managed_span(STEP, "serve.request", kind="server")  # type: ignore[arg-type]
    assert spans.get_finished_spans() == ()
