"""Carry the current trace into Ray tasks and actor methods (without importing Ray).

The callee is decorated with :func:`traced_remote_call`, which takes one more keyword
argument (:data:`CARRIER_KWARG`) and continues the trace it names; the caller dispatches with
:func:`with_trace_context` (``with_trace_context(fn).remote(x)``), which fills it in.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from typing import Any, Final, TypeVar, cast, overload

from opentelemetry import context as otel_context
from opentelemetry.context import Context
from opentelemetry.trace import SpanKind, Tracer

from nemo.lens._core.spans import SpanScope, managed_span
from nemo.lens.propagation import continue_trace, extract_context, inject_context
from nemo.lens.spec import DynamicSpanGroup

__all__ = [
    "CARRIER_KWARG",
    "extract_ray_context",
    "inject_ray_context",
    "ray_dispatch_with_context",
    "traced_remote_call",
    "with_trace_context",
]

CARRIER_KWARG: Final = "_otel_carrier"
"""The keyword argument that carries the W3C carrier into a decorated callee."""

_F = TypeVar("_F", bound=Callable[..., Any])


def inject_ray_context(context: Context | None = None) -> dict[str, str]:
    """Return the current (or the given) trace context as a picklable W3C carrier."""
    return dict(inject_context(context=context))


def extract_ray_context(carrier: object = None) -> Context:
    """Return the current context continued from *carrier* (unchanged when it names no span,
    or is ``None``, as in 0.1.0); for callees that take the carrier another way. Never raises."""
    return extract_context(carrier, context=otel_context.get_current())


def _with_carrier_parameter(signature: inspect.Signature) -> inspect.Signature:
    """*signature* plus a keyword-only ``_otel_carrier=None`` (before any ``**kwargs``): Ray
    checks each ``.remote`` call against the signature ``functools.wraps`` reports."""
    parameters = list(signature.parameters.values())
    carrier = inspect.Parameter(
        CARRIER_KWARG, inspect.Parameter.KEYWORD_ONLY, default=None, annotation="dict[str, str]"
    )
    at = len(parameters)
    if parameters and parameters[-1].kind is inspect.Parameter.VAR_KEYWORD:
        at -= 1
    parameters.insert(at, carrier)
    return signature.replace(parameters=parameters)


@overload
def traced_remote_call(method: _F, tracer: Tracer | None = None) -> _F: ...


@overload
def traced_remote_call(
    method: None = None,
    tracer: Tracer | None = None,
    *,
    name: str | None = None,
    group: str | None = None,
    kind: SpanKind = SpanKind.SERVER,
) -> Callable[[_F], _F]: ...


def traced_remote_call(
    method: Callable[..., Any] | None = None,
    tracer: Tracer | None = None,
    *,
    name: str | None = None,
    group: str | None = None,
    kind: SpanKind = SpanKind.SERVER,
) -> Any:
    """Decorate a Ray task or actor method (or coroutine function) to continue the caller's
    trace; bare (``@traced_remote_call``) or with options (``@traced_remote_call(name=...)``).

    The decorated callable takes one more keyword argument, :data:`CARRIER_KWARG`; the body
    runs as a child of the span it names, in a span of its own called *name* (default: the
    function's qualified name) of *kind*, which records an exception and re-raises it. With
    *group*, that span is made only while the group is enabled (the caller's context is
    continued either way). *tracer* defaults to nemo.lens's tracer. Called without the
    argument, the function runs in whatever context it finds.
    """
    if method is None:

        def decorate(function: _F) -> _F:
            return cast(_F, _decorate(function, tracer, name, group, kind))

        return decorate
    return _decorate(method, tracer, name, group, kind)


def _decorate(
    function: Callable[..., Any],
    tracer: Tracer | None,
    name: str | None,
    group: str | None,
    kind: SpanKind,
) -> Callable[..., Any]:
    if not callable(function):
        raise TypeError(f"traced_remote_call() decorates a function, got {function!r}")
    signature = inspect.signature(function)
    if CARRIER_KWARG in signature.parameters:
        raise TypeError(
            f"{function.__qualname__} already has a parameter named {CARRIER_KWARG!r}, "
            "which traced_remote_call() needs for the trace context; rename it"
        )
    span_name = name or getattr(function, "__qualname__", None) or repr(function)

    def scope() -> AbstractContextManager[object]:
        # Through the one gate, as managed_span: tagged when gated, nothing when disabled.
        if group is None:
            return SpanScope(tracer, span_name, kind, None, None, True, None)
        return managed_span(DynamicSpanGroup(group), span_name, tracer, kind=kind)

    wrapper: Callable[..., Any]
    if inspect.iscoroutinefunction(function):

        async def run_async(*args: Any, **kwargs: Any) -> Any:
            carrier = kwargs.pop(CARRIER_KWARG, None)
            with continue_trace(carrier), scope():
                return await function(*args, **kwargs)

        wrapper = run_async
    else:

        def run(*args: Any, **kwargs: Any) -> Any:
            carrier = kwargs.pop(CARRIER_KWARG, None)
            with continue_trace(carrier), scope():
                return function(*args, **kwargs)

        wrapper = run
    wrapper = functools.wraps(function)(wrapper)
    wrapper.__signature__ = _with_carrier_parameter(signature)  # type: ignore[attr-defined]
    return wrapper


def ray_dispatch_with_context(
    remote_fn: Any,
    *args: Any,
    _carrier: Mapping[str, str] | None = None,
    **kwargs: Any,
) -> Any:
    """Return ``remote_fn.remote(*args, **kwargs)`` with the current trace context (or
    *_carrier*) attached; the callee must be decorated with :func:`traced_remote_call`."""
    carrier = inject_ray_context() if _carrier is None else dict(_carrier)
    return remote_fn.remote(*args, **{CARRIER_KWARG: carrier}, **kwargs)


class _TracedRemote:
    """``remote_fn`` with a ``.remote`` that attaches the caller's trace context."""

    __slots__ = ("_remote_fn",)

    def __init__(self, remote_fn: Any) -> None:
        if not callable(getattr(remote_fn, "remote", None)):
            raise TypeError(
                "with_trace_context() needs a Ray remote function or actor method (something "
                f"with .remote), got {remote_fn!r}; decorate the function with @ray.remote"
            )
        self._remote_fn = remote_fn

    def remote(self, *args: Any, **kwargs: Any) -> Any:
        """Call ``.remote`` with the caller's current trace context attached."""
        return ray_dispatch_with_context(self._remote_fn, *args, **kwargs)

    def options(self, **options: Any) -> _TracedRemote:
        """Return ``remote_fn.options(**options)``, still attaching the trace context."""
        return _TracedRemote(self._remote_fn.options(**options))

    def __repr__(self) -> str:
        return f"with_trace_context({self._remote_fn!r})"


def with_trace_context(remote_fn: Any) -> _TracedRemote:
    """Wrap a Ray remote function or actor method so ``.remote`` carries the trace:
    ``with_trace_context(fn).remote(x)`` is ``fn.remote(x, _otel_carrier=...)``;
    ``.options(...)`` works as on Ray's own objects."""
    return _TracedRemote(remote_fn)
