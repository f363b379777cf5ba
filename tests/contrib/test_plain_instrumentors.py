"""The HTTP helpers with an instrumentor that takes no providers (an old one, or a stand-in
as 0.1.0's and v0.2.0's tests install): called without them, unless one was asked for."""

from __future__ import annotations

import sys
import types
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider

from nemo.lens.contrib.aiohttp import instrument_aiohttp_client
from nemo.lens.contrib.fastapi import instrument_fastapi


def _install(monkeypatch: pytest.MonkeyPatch, name: str, **members: Any) -> None:
    module = types.ModuleType(name)
    for key, value in members.items():
        setattr(module, key, value)
    monkeypatch.setitem(sys.modules, name, module)


def _plain_aiohttp(monkeypatch: pytest.MonkeyPatch, calls: list[dict[str, Any]]) -> None:
    class AioHttpClientInstrumentor:
        def instrument(self, url_filter: Any = None) -> None:
            calls.append({"url_filter": url_filter})

    _install(
        monkeypatch,
        "opentelemetry.instrumentation.aiohttp_client",
        AioHttpClientInstrumentor=AioHttpClientInstrumentor,
    )


def _plain_fastapi(monkeypatch: pytest.MonkeyPatch, calls: list[object]) -> None:
    class FastAPIInstrumentor:
        @staticmethod
        def instrument_app(app: object) -> None:
            calls.append(app)

    _install(
        monkeypatch,
        "opentelemetry.instrumentation.fastapi",
        FastAPIInstrumentor=FastAPIInstrumentor,
    )


def test_aiohttp_with_an_instrumentor_that_takes_no_provider(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[dict[str, Any]] = []
    _plain_aiohttp(monkeypatch, calls)

    instrument_aiohttp_client()
    instrument_aiohttp_client(url_filter=str.lower)

    assert calls == [{"url_filter": None}, {"url_filter": str.lower}]


def test_fastapi_with_an_instrumentor_that_takes_no_provider(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[object] = []
    _plain_fastapi(monkeypatch, calls)
    app = object()

    instrument_fastapi(app)
    instrument_fastapi(app, "nemo-gym")  # 0.1.0's service-name argument

    assert calls == [app, app]


def test_a_provider_or_group_such_an_instrumentor_cannot_take_is_an_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    aiohttp_calls: list[dict[str, Any]] = []
    fastapi_calls: list[object] = []
    _plain_aiohttp(monkeypatch, aiohttp_calls)
    _plain_fastapi(monkeypatch, fastapi_calls)

    with pytest.raises(TypeError, match=r"instrument\(\) takes no tracer_provider"):
        instrument_aiohttp_client(TracerProvider())
    with pytest.raises(TypeError, match=r"instrument_app\(\) takes no tracer_provider"):
        instrument_fastapi(object(), group="gym.server")
    assert aiohttp_calls == [] and fastapi_calls == []


def test_an_instrumentor_that_takes_providers_gets_them(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[dict[str, Any]] = []

    class AioHttpClientInstrumentor:
        def instrument(self, **kwargs: Any) -> None:
            seen.append(kwargs)

    _install(
        monkeypatch,
        "opentelemetry.instrumentation.aiohttp_client",
        AioHttpClientInstrumentor=AioHttpClientInstrumentor,
    )
    provider = TracerProvider()

    instrument_aiohttp_client(provider)

    (arguments,) = seen
    assert arguments["tracer_provider"] is provider
    assert "meter_provider" in arguments
