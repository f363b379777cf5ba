"""The no-op fallbacks: the real signatures, and no tracing at all."""

from __future__ import annotations

import inspect
from typing import Any

import pytest

from nemo.lens import fallbacks, helpers, span_utilities, state
from nemo.lens.groups import SpanGroup

PUBLIC = [
    "managed_span",
    "trace_fn",
    "span_cm",
    "is_span_group_enabled",
    "safe_set_span_attributes",
    "redact_value",
    "emit_span",
]


def _real(name: str) -> Any:
    if name == "emit_span":
        return span_utilities.emit_span
    return getattr(state if name == "is_span_group_enabled" else helpers, name)


@pytest.mark.parametrize("name", PUBLIC)
def test_each_fallback_has_exactly_the_real_signature(name: str) -> None:
    real = inspect.signature(_real(name))
    fallback = inspect.signature(getattr(fallbacks, name))

    # Parameter names, kinds, defaults and annotations, and the return annotation.
    assert fallback == real
    assert [(p.name, p.kind, p.default) for p in fallback.parameters.values()] == [
        (p.name, p.kind, p.default) for p in real.parameters.values()
    ]


def test_the_fallbacks_export_the_primitives_and_nothing_else() -> None:
    assert sorted(fallbacks.__all__) == sorted([*PUBLIC, "DEFAULT_REDACT_KEYS", "SpanRegistry"])


def test_the_namespace_holds_only_what_it_documents() -> None:
    # `from nemo.lens.fallbacks import *`, dir() and an IDE's completion show the stand-ins,
    # not the typing helpers they are written with.
    public = {name for name in vars(fallbacks) if not name.startswith("_")}
    assert public == set(fallbacks.__all__)
    for helper in ("Any", "Final", "TypeVar", "cast", "TYPE_CHECKING", "annotations"):
        assert not hasattr(fallbacks, helper), helper
    namespace: dict[str, object] = {}
    exec("from nemo.lens.fallbacks import *", namespace)
    assert set(namespace) - {"__builtins__"} == set(fallbacks.__all__)


def test_managed_span_yields_none_and_runs_the_body() -> None:
    ran = []
    with fallbacks.managed_span(SpanGroup.STEP, "step", None, iteration=1) as span:
        ran.append(span)

    assert ran == [None]
    assert fallbacks.managed_span("a", "b") is fallbacks.managed_span("c", "d", kind=None)


def test_span_cm_yields_none_and_lets_exceptions_through() -> None:
    with pytest.raises(ValueError, match="kept"), fallbacks.span_cm("x", None, False, a=1) as span:
        assert span is None
        raise ValueError("kept")


def test_trace_fn_returns_the_function_itself() -> None:
    def work(x: int) -> int:
        return x + 1

    assert fallbacks.trace_fn(SpanGroup.STEP, "work")(work) is work


def test_no_group_is_ever_enabled() -> None:
    state.set_enabled_span_groups(SpanGroup.ALL_GROUPS)  # the real state has no say here

    assert not fallbacks.is_span_group_enabled(SpanGroup.STEP)


def test_safe_set_span_attributes_ignores_anything_it_is_given() -> None:
    class Anything:
        def __getattr__(self, name: str) -> Any:
            raise AssertionError(f"fallback used span.{name}")

    fallbacks.safe_set_span_attributes(Anything(), {"a": 1})  # type: ignore[arg-type]
    fallbacks.safe_set_span_attributes(None, None)


def test_redact_value_still_redacts() -> None:
    assert fallbacks.redact_value("llm.Prompt", "secret") == "[REDACTED]"
    assert fallbacks.redact_value("prompt", ("a", 1)) == ("[REDACTED]", 1)
    assert fallbacks.redact_value("label", "shown") == "shown"
    assert fallbacks.redact_value("email", "a@b", {"EMAIL"}) == "[REDACTED]"
