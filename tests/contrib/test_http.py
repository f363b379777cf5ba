"""FastAPI and aiohttp helpers against real apps, with nemo.lens's providers.

Skipped when the frameworks or their OpenTelemetry instrumentations are not
installed (``pip install 'nemo-lens[fastapi,aiohttp]'``); what the helpers do
without them is in test_without_extras.py.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from nemo.lens import NemoLensConfig, managed_span, semconv, setup_telemetry
from nemo.lens.consumers.gym import GymSpanGroup

_TRACE_ID = 0x0AF7651916CD43DD8448EB211C80319C
_SPAN_ID = 0xB7AD6B7169203331
_TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


def _set_up(spec: str = "all") -> InMemorySpanExporter:
    exporter = InMemorySpanExporter()
    config = NemoLensConfig(
        enabled=True,
        exporter="none",
        metrics_enabled=False,
        span_groups=spec,
        span_group_cls=GymSpanGroup,
    )
    setup_telemetry(config, span_exporter=exporter)
    return exporter


def _of_kind(exporter: InMemorySpanExporter, kind: SpanKind) -> list[ReadableSpan]:
    return [span for span in exporter.get_finished_spans() if span.kind is kind]


def _named(exporter: InMemorySpanExporter, name: str) -> ReadableSpan:
    (span,) = [span for span in exporter.get_finished_spans() if span.name == name]
    return span


# -- FastAPI --------------------------------------------------------------------------------


_NATIVE_TELEMETRY_OFF: dict[str, Any] = {
    "telemetry": {"tracing": False, "metrics": False, "logs": False}
}


def _has_native_telemetry() -> bool:
    import fastapi

    return "telemetry" in inspect.signature(fastapi.FastAPI).parameters


@pytest.fixture
def fastapi_app() -> Iterator[Any]:
    fastapi = pytest.importorskip("fastapi", reason="needs the [fastapi] extra")
    pytest.importorskip("opentelemetry.instrumentation.fastapi", reason="needs the [fastapi] extra")
    pytest.importorskip("httpx", reason="the FastAPI tests call the app through httpx")
    from nemo.lens.contrib.fastapi import uninstrument_fastapi

    # Recent FastAPI releases also trace natively, through OpenTelemetry's global
    # provider (which setup_telemetry claims); off here, so that what these tests
    # see is the helper's doing (the test below covers the two together).
    app = fastapi.FastAPI(**_NATIVE_TELEMETRY_OFF) if _has_native_telemetry() else fastapi.FastAPI()

    def rollout() -> dict[str, str]:
        with managed_span(GymSpanGroup.ROLLOUT, "gym.rollout"):
            return {"ok": "yes"}

    app.add_api_route("/rollout", rollout, methods=["GET"])

    yield app
    uninstrument_fastapi(app)


def _get(app: Any, path: str, headers: dict[str, str] | None = None) -> int:
    import httpx

    async def call() -> int:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
            response = await client.get(path, headers=headers)
            return response.status_code

    return asyncio.run(call())


def test_fastapi_instrumented_before_set_up_exports_after_it(fastapi_app: Any) -> None:
    from nemo.lens.contrib.fastapi import instrument_fastapi

    instrument_fastapi(fastapi_app)  # before setup_telemetry: follows it later
    exporter = _set_up()
    assert _get(fastapi_app, "/rollout", {"traceparent": _TRACEPARENT}) == 200

    (server,) = _of_kind(exporter, SpanKind.SERVER)
    assert server.context is not None and server.parent is not None
    assert (server.context.trace_id, server.parent.span_id) == (_TRACE_ID, _SPAN_ID)
    handler = _named(exporter, "gym.rollout")
    assert handler.parent is not None and handler.parent.span_id == server.context.span_id


def test_fastapi_group_disabled_makes_no_server_span_but_keeps_the_trace(
    fastapi_app: Any,
) -> None:
    from nemo.lens.contrib.fastapi import instrument_fastapi

    exporter = _set_up("all,-server")
    instrument_fastapi(fastapi_app, group=GymSpanGroup.SERVER)
    assert _get(fastapi_app, "/rollout", {"traceparent": _TRACEPARENT}) == 200

    assert [span.name for span in exporter.get_finished_spans()] == ["gym.rollout"]
    handler = _named(exporter, "gym.rollout")
    assert handler.context is not None and handler.parent is not None
    assert (handler.context.trace_id, handler.parent.span_id) == (_TRACE_ID, _SPAN_ID)


def test_fastapi_group_enabled_makes_the_server_span(fastapi_app: Any) -> None:
    from nemo.lens.contrib.fastapi import instrument_fastapi

    exporter = _set_up("default")  # GymSpanGroup's default includes server and rollout
    instrument_fastapi(fastapi_app, group=GymSpanGroup.SERVER)
    assert _get(fastapi_app, "/rollout") == 200
    (server,) = _of_kind(exporter, SpanKind.SERVER)
    attributes = server.attributes or {}
    assert attributes[semconv.SPAN_GROUP] == GymSpanGroup.SERVER
    assert attributes[semconv.SPAN_CATEGORY] == GymSpanGroup.categories()[GymSpanGroup.SERVER]


def test_fastapi_helper_replaces_native_telemetry_rather_than_doubling_it(
    fastapi_app: Any,
) -> None:
    import fastapi

    from nemo.lens.contrib.fastapi import instrument_fastapi, uninstrument_fastapi

    if not _has_native_telemetry():
        pytest.skip("this FastAPI has no native telemetry")
    native = fastapi.FastAPI()  # native telemetry on, as users get it
    native.get("/rollout")(lambda: {"ok": "yes"})
    exporter = _set_up()
    instrument_fastapi(native)
    try:
        assert _get(native, "/rollout", {"traceparent": _TRACEPARENT}) == 200
    finally:
        uninstrument_fastapi(native)
    (server,) = _of_kind(exporter, SpanKind.SERVER)
    assert server.instrumentation_scope is not None
    assert server.instrumentation_scope.name == "opentelemetry.instrumentation.fastapi"


def test_fastapi_with_an_explicit_provider(fastapi_app: Any) -> None:
    from nemo.lens.contrib.fastapi import instrument_fastapi

    own = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(own))
    instrument_fastapi(fastapi_app, provider, excluded_urls="/health")
    assert _get(fastapi_app, "/rollout") == 200
    assert _get(fastapi_app, "/health") == 404
    routes = [(span.attributes or {})["http.route"] for span in _of_kind(own, SpanKind.SERVER)]
    assert routes == ["/rollout"]


def test_fastapi_takes_0_1_0s_service_name_and_rejects_anything_else_as_provider(
    fastapi_app: Any,
) -> None:
    from nemo.lens.contrib.fastapi import instrument_fastapi, uninstrument_fastapi

    exporter = _set_up()
    instrument_fastapi(fastapi_app, "nemo-gym")  # 0.1.0: instrument_fastapi(app, service_name)
    assert _get(fastapi_app, "/rollout") == 200
    assert len(_of_kind(exporter, SpanKind.SERVER)) == 1
    uninstrument_fastapi(fastapi_app)
    # The keyword form, on an app of its own: FastAPI builds an app's middleware once,
    # so an app is not instrumented a second time after uninstrumenting it.
    other = type(fastapi_app)(**_NATIVE_TELEMETRY_OFF) if _has_native_telemetry() else None
    other = other or type(fastapi_app)()
    other.add_api_route("/rollout", lambda: {"ok": "yes"}, methods=["GET"])
    instrument_fastapi(other, service_name="nemo-gym")
    assert _get(other, "/rollout") == 200
    assert len(_of_kind(exporter, SpanKind.SERVER)) == 2
    uninstrument_fastapi(other)

    with pytest.raises(TypeError) as info:
        instrument_fastapi(fastapi_app, 42)  # type: ignore[arg-type]
    assert "must be an OpenTelemetry TracerProvider or None" in str(info.value)
    assert "NemoLensConfig.service_name" in str(info.value)


def test_fastapi_uninstrument_stops_the_spans(fastapi_app: Any) -> None:
    from nemo.lens.contrib.fastapi import instrument_fastapi, uninstrument_fastapi

    exporter = _set_up()
    instrument_fastapi(fastapi_app)
    uninstrument_fastapi(fastapi_app)
    assert _get(fastapi_app, "/rollout") == 200
    assert _of_kind(exporter, SpanKind.SERVER) == []


# -- aiohttp --------------------------------------------------------------------------------


@pytest.fixture
def aiohttp_module() -> Iterator[Any]:
    aiohttp = pytest.importorskip("aiohttp", reason="needs the [aiohttp] extra")
    pytest.importorskip(
        "opentelemetry.instrumentation.aiohttp_client", reason="needs the [aiohttp] extra"
    )
    from nemo.lens.contrib.aiohttp import uninstrument_aiohttp_client

    yield aiohttp
    uninstrument_aiohttp_client()


async def _request_seen_by_server(aiohttp: Any, session_kwargs: dict[str, Any]) -> str:
    """Serve one request on loopback; return the traceparent header the server received."""
    from aiohttp import web

    seen: list[str] = []

    async def handle(request: web.Request) -> web.Response:
        seen.append(request.headers.get("traceparent", ""))
        return web.Response(text="ok")

    app = web.Application()
    app.router.add_get("/", handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        port = runner.addresses[0][1]
        timeout = aiohttp.ClientTimeout(total=10)
        async with (
            aiohttp.ClientSession(timeout=timeout, **session_kwargs) as session,
            session.get(f"http://127.0.0.1:{port}/") as response,
        ):
            assert response.status == 200
    finally:
        await runner.cleanup()
    return seen[0]


def _send(aiohttp: Any, session_kwargs: dict[str, Any] | None = None) -> str:
    async def under_a_span() -> str:
        with managed_span(GymSpanGroup.ROLLOUT, "gym.rollout"):
            return await _request_seen_by_server(aiohttp, session_kwargs or {})

    return asyncio.run(under_a_span())


def _ids_in(traceparent: str) -> tuple[int, int]:
    _, trace_id, span_id, _ = traceparent.split("-")
    return int(trace_id, 16), int(span_id, 16)


def test_aiohttp_client_spans_and_headers(aiohttp_module: Any) -> None:
    from nemo.lens.contrib.aiohttp import instrument_aiohttp_client

    exporter = _set_up()
    instrument_aiohttp_client()
    header = _send(aiohttp_module)

    (client,) = _of_kind(exporter, SpanKind.CLIENT)
    rollout = _named(exporter, "gym.rollout")
    assert client.context is not None and rollout.context is not None
    assert client.parent is not None and client.parent.span_id == rollout.context.span_id
    # The server is told to continue from the client span.
    assert _ids_in(header) == (client.context.trace_id, client.context.span_id)


def test_aiohttp_group_disabled_still_sends_the_callers_context(aiohttp_module: Any) -> None:
    from nemo.lens.contrib.aiohttp import instrument_aiohttp_client

    exporter = _set_up("all,-http_client")
    instrument_aiohttp_client(group=GymSpanGroup.HTTP_CLIENT)
    header = _send(aiohttp_module)

    assert _of_kind(exporter, SpanKind.CLIENT) == []
    rollout = _named(exporter, "gym.rollout")
    assert rollout.context is not None
    assert _ids_in(header) == (rollout.context.trace_id, rollout.context.span_id)


def test_aiohttp_trace_config_for_one_session(aiohttp_module: Any) -> None:
    from nemo.lens.contrib.aiohttp import aiohttp_trace_config

    exporter = _set_up()
    traced_header = _send(aiohttp_module, {"trace_configs": [aiohttp_trace_config()]})
    plain_header = _send(aiohttp_module)  # a session without it is left alone

    (client,) = _of_kind(exporter, SpanKind.CLIENT)
    assert client.context is not None
    assert _ids_in(traced_header)[1] == client.context.span_id
    assert plain_header == ""
