"""The group-checked declarations describe the real primitives, which stay the same functions.

Type checkers see generated declarations of ``managed_span``, ``trace_fn`` and
``is_span_group_enabled`` (in ``nemo.lens._signatures`` and in every consumer
module); the code that runs is ``nemo.lens.helpers`` and ``nemo.lens.state``.
These tests keep the two in step and make sure typing added no call layer.
"""

from __future__ import annotations

import ast
import importlib
import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import nemo.lens
from nemo.lens import helpers, state
from nemo.lens.cli import span_group_classes
from nemo.lens.groups import DynamicSpanGroup

REPO = Path(__file__).resolve().parents[2]

REAL: dict[str, Callable[..., Any]] = {
    "managed_span": helpers.managed_span,
    "trace_fn": helpers.trace_fn,
    "is_span_group_enabled": state.is_span_group_enabled,
}
CONSUMER_MODULES = sorted(
    cls.__module__ for name, cls in span_group_classes().items() if name != "base"
)
DECLARING = [
    "src/nemo/lens/_signatures.py",
    *(f"src/{m.replace('.', '/')}.py" for m in CONSUMER_MODULES),
]

_KINDS = inspect.Parameter


def _declared(path: Path) -> dict[str, ast.FunctionDef]:
    """Each primitive's declaration in a generated module (the implementation of overloads)."""
    found: dict[str, ast.FunctionDef] = {}
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if (
            isinstance(node, ast.FunctionDef)
            and node.name in REAL
            and not any(ast.unparse(d) == "overload" for d in node.decorator_list)
        ):
            found[node.name] = node
    return found


def _parameters(node: ast.FunctionDef) -> list[tuple[str, object, str, str]]:
    """(name, kind, annotation, default) of each parameter, group's annotation left out."""
    args = node.args
    out: list[tuple[str, object, str, str]] = []
    positional = [*args.posonlyargs, *args.args]
    defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    for arg, default in zip(positional, defaults, strict=True):
        kind = _KINDS.POSITIONAL_ONLY if arg in args.posonlyargs else _KINDS.POSITIONAL_OR_KEYWORD
        out.append((arg.arg, kind, _text(arg.annotation), _text(default)))
    if args.vararg is not None:
        out.append((args.vararg.arg, _KINDS.VAR_POSITIONAL, _text(args.vararg.annotation), ""))
    for arg, default in zip(args.kwonlyargs, args.kw_defaults, strict=True):
        out.append((arg.arg, _KINDS.KEYWORD_ONLY, _text(arg.annotation), _text(default)))
    if args.kwarg is not None:
        out.append((args.kwarg.arg, _KINDS.VAR_KEYWORD, _text(args.kwarg.annotation), ""))
    return [(n, k, "" if n == "group" else a, d) for n, k, a, d in out]


def _text(node: ast.expr | None) -> str:
    return "" if node is None else ast.unparse(node)


def _real_parameters(function: Callable[..., Any]) -> list[tuple[str, object, str, str]]:
    out: list[tuple[str, object, str, str]] = []
    for p in inspect.signature(function).parameters.values():
        default = "" if p.default is p.empty else repr(p.default)
        annotation = "" if p.name == "group" else str(p.annotation)
        out.append((p.name, p.kind, annotation, default))
    return out


@pytest.mark.parametrize("path", DECLARING)
@pytest.mark.parametrize("name", sorted(REAL))
def test_each_declaration_has_the_real_parameters(path: str, name: str) -> None:
    declared = _declared(REPO / path)[name]
    real = REAL[name]

    assert _parameters(declared) == _real_parameters(real), (
        f"{path} declares {name} differently from the function that runs: change the "
        "templates under src/nemo/lens/codegen/templates (_primitives.py.j2), then run "
        "`make generate`"
    )
    assert _text(declared.returns) == inspect.signature(real).return_annotation


@pytest.mark.parametrize("name", sorted(REAL))
def test_typing_adds_no_call_layer(name: str) -> None:
    real = REAL[name]
    # signature_of returns the function itself: no wrapper between the caller and the
    # one frozenset test a disabled call costs.
    assert not hasattr(real, "__wrapped__")
    assert real.__code__.co_name == name
    assert getattr(nemo.lens, name) is real


@pytest.mark.parametrize("module", CONSUMER_MODULES)
def test_a_consumer_module_serves_the_very_same_primitives(module: str) -> None:
    loaded = importlib.import_module(module)
    for name, real in REAL.items():
        assert getattr(loaded, name) is real
    assert {"managed_span", "trace_fn", "is_span_group_enabled"} <= set(loaded.__all__)
    with pytest.raises(AttributeError, match=f"module '{module}' has no attribute 'tracer'"):
        loaded.tracer  # noqa: B018


def test_a_disabled_dynamic_group_is_still_one_shared_no_op() -> None:
    first = helpers.managed_span(DynamicSpanGroup("not_enabled"), "a")
    second = helpers.managed_span(DynamicSpanGroup("nor_this"), "b")
    assert first is second
    with first as span:
        assert span is None
