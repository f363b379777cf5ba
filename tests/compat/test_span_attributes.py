"""Every span a primitive emits carries ``lens.group`` and ``lens.span_category`` (item 5)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from nemo.lens import (
    NemoLensConfig,
    create_linked_span,
    managed_span,
    semconv,
    setup_telemetry,
    span_cm,
    testing,
    trace_fn,
)
from nemo.lens.cli import main
from nemo.lens.contrib._providers import GatedTracerProvider
from nemo.lens.contrib.ray import traced_remote_call
from nemo.lens.groups import DynamicSpanGroup, SpanGroup
from nemo.lens.spec import GOODPUT, PROFILING
from nemo.lens.state import group_tags, set_enabled_span_groups, set_span_group_classes

GROUP = DynamicSpanGroup(sorted(SpanGroup.ALL_GROUPS)[0])


def _tags(span: ReadableSpan) -> tuple[object, object]:
    attributes = span.attributes or {}
    return attributes.get(semconv.SPAN_GROUP), attributes.get(semconv.SPAN_CATEGORY)


def _by_name(exporter: InMemorySpanExporter) -> dict[str, tuple[object, object]]:
    return {span.name: _tags(span) for span in exporter.get_finished_spans()}


def _emit_through_every_primitive(group: DynamicSpanGroup, provider: TracerProvider) -> None:
    @trace_fn(group, "trace_fn.function")
    def function(x: int) -> int:
        return x

    @trace_fn(group, "trace_fn.unmirrored")
    def unmirrored(*args: Any, **kwargs: Any) -> None:
        pass

    @trace_fn(group, "trace_fn.coroutine")
    async def coroutine() -> None:
        pass

    @trace_fn(group, "trace_fn.generator")
    def generator() -> Iterator[int]:
        yield 1

    @trace_fn(group, "trace_fn.async_generator")
    async def async_generator() -> AsyncIterator[int]:
        yield 1

    @traced_remote_call(name="ray.remote_call", group=group)
    def remote(x: int) -> int:
        return x

    async def drain() -> None:
        await coroutine()
        async for _ in async_generator():
            pass

    with managed_span(group, "managed_span"):
        pass
    with span_cm("span_cm", group=group):
        pass
    create_linked_span("create_linked_span", None, group=group).end()
    gated = GatedTracerProvider(provider, group).get_tracer("contrib")
    with gated.start_as_current_span("contrib.gated", attributes={"http.route": "/x"}):
        pass
    function(1)
    unmirrored(1, a=2)
    list(generator())
    asyncio.run(drain())
    remote(1)


_PRIMITIVE_SPANS = [
    "managed_span",
    "span_cm",
    "create_linked_span",
    "contrib.gated",
    "trace_fn.function",
    "trace_fn.unmirrored",
    "trace_fn.generator",
    "trace_fn.coroutine",
    "trace_fn.async_generator",
    "ray.remote_call",
]


def test_every_primitive_tags_its_span_with_group_and_category() -> None:
    with testing.capture_spans("all") as exporter:
        # What an instrumentation would be given: a provider exporting to the same place.
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        _emit_through_every_primitive(GROUP, provider)
    expected = (GROUP, SpanGroup.categories()[GROUP])
    assert _by_name(exporter) == dict.fromkeys(_PRIMITIVE_SPANS, expected)
    gated = next(s for s in exporter.get_finished_spans() if s.name == "contrib.gated")
    assert (gated.attributes or {})["http.route"] == "/x"  # the instrumentation's own kept


def test_a_caller_attribute_cannot_mislabel_the_span() -> None:
    forged: dict[str, Any] = {semconv.SPAN_GROUP: "forged", semconv.SPAN_CATEGORY: "forged"}
    with testing.capture_spans("all") as exporter:
        with managed_span(GROUP, "managed", **forged):
            pass
        with span_cm("cm", group=GROUP, **forged):
            pass
    expected = (GROUP, SpanGroup.categories()[GROUP])
    assert _by_name(exporter) == {"managed": expected, "cm": expected}


def test_span_cm_group_tags_without_gating() -> None:
    with testing.capture_spans(()) as exporter:  # nothing enabled
        with managed_span(GROUP, "gated"):
            pass
        with span_cm("tagged", group=GROUP):
            pass
        with span_cm("untagged"):
            pass
    assert _by_name(exporter) == {
        "tagged": (GROUP, SpanGroup.categories()[GROUP]),
        "untagged": (None, None),
    }


# Two hand-written classes that disagree on one group's category.
class _GoodputFirst(SpanGroup):
    DISPUTED = "compat_disputed"
    ALL_GROUPS = SpanGroup.ALL_GROUPS | frozenset([DISPUTED])
    GOODPUT_GROUPS: ClassVar[frozenset[str]] = SpanGroup.GOODPUT_GROUPS | frozenset([DISPUTED])


class _ProfilingFirst(SpanGroup):
    DISPUTED = "compat_disputed"
    ALL_GROUPS = SpanGroup.ALL_GROUPS | frozenset([DISPUTED])


@pytest.mark.parametrize(
    ("classes", "category"),
    [((_GoodputFirst, _ProfilingFirst), GOODPUT), ((_ProfilingFirst, _GoodputFirst), PROFILING)],
)
def test_the_category_comes_from_the_configured_classes(
    classes: tuple[type[SpanGroup], ...], category: str
) -> None:
    exporter = InMemorySpanExporter()
    config = NemoLensConfig(
        enabled=True,
        exporter="none",
        metrics_enabled=False,
        span_group_cls=classes,
        span_groups="compat_disputed",
    )
    setup_telemetry(config, span_exporter=exporter)
    with managed_span(DynamicSpanGroup("compat_disputed"), "disputed"):
        pass
    assert _by_name(exporter) == {"disputed": ("compat_disputed", category)}


def test_a_name_no_class_knows_is_profiling() -> None:
    name = DynamicSpanGroup("compat_known_to_nobody")
    set_span_group_classes(_GoodputFirst)
    assert group_tags(_GoodputFirst.DISPUTED)[semconv.SPAN_CATEGORY] == GOODPUT
    with (
        testing.capture_spans([name], span_group_cls=_GoodputFirst) as exporter,
        managed_span(name, "unknown"),
    ):
        pass
    assert _by_name(exporter) == {"unknown": (name, PROFILING)}


def test_set_enabled_span_groups_alone_uses_the_base_categories() -> None:
    goodput = DynamicSpanGroup(sorted(SpanGroup.GOODPUT_GROUPS)[0])
    set_enabled_span_groups([goodput])
    assert group_tags(goodput) == {semconv.SPAN_GROUP: goodput, semconv.SPAN_CATEGORY: GOODPUT}


# -- the CLI reads the new key, and the old one ----------------------------------------------


def _record(name: str, attributes: dict[str, Any], start: int) -> str:
    return json.dumps(
        {
            "name": name,
            "trace_id": "ab" * 16,
            "span_id": f"{start:016x}",
            "parent_span_id": None,
            "kind": "INTERNAL",
            "start_time_unix_nano": 1_700_000_000_000_000_000 + start * 1_000_000,
            "end_time_unix_nano": 1_700_000_000_000_000_000 + (start + 1) * 1_000_000,
            "status": {"code": "UNSET", "description": None},
            "attributes": attributes,
            "events": [],
            "links": [],
            "resource": {"service.name": "svc", "nemo.run_id": "r", "nemo.rank": 0},
            "scope": {"name": "nemo.lens", "version": "0.1.0"},
        }
    )


@pytest.fixture
def mixed_trace(tmp_path: Path) -> Path:
    path = tmp_path / "mixed.jsonl"
    path.write_text(
        "\n".join(
            [
                _record("old", {semconv.LEGACY_SPAN_GROUP: "compat_old_group"}, 1),
                _record("new", {semconv.SPAN_GROUP: "compat_new_group"}, 2),
                _record("none", {}, 3),
            ]
        )
        + "\n",
        encoding="utf-8",
    )
    return path


def test_summarize_groups_by_the_new_key_and_still_reads_the_old(
    mixed_trace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["summarize", str(mixed_trace)]) == 0
    rows = {line.split()[0] for line in capsys.readouterr().out.splitlines() if line[:2] == "  "}
    assert {"compat_old_group", "compat_new_group", "(none)"} <= rows


def test_convert_rows_by_either_key_and_keeps_neither_as_an_argument(
    mixed_trace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    output = tmp_path / "out.json"
    assert main(["convert", str(mixed_trace), "-o", str(output)]) == 0
    document = json.loads(output.read_text(encoding="utf-8"))
    events = [event for event in document["traceEvents"] if event.get("ph") == "X"]
    categories = {event["name"]: event["cat"] for event in events}
    assert categories["old"] == "compat_old_group"
    assert categories["new"] == "compat_new_group"
    for event in events:
        assert semconv.SPAN_GROUP not in event["args"]
        assert semconv.LEGACY_SPAN_GROUP not in event["args"]
