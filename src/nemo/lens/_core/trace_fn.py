"""``trace_fn``: trace each call of a function (coroutine, generator) when its group is enabled.

The group is checked on every call; spans are made through :mod:`nemo.lens._core.spans`,
like every other gated span.
"""

from __future__ import annotations

import functools
import inspect
import linecache
from collections.abc import AsyncGenerator, Callable, Generator
from typing import Any, Final, TypeVar, cast

from opentelemetry import context as _context
from opentelemetry import trace as _trace
from opentelemetry.trace import Span, Tracer

from nemo.lens import _signatures
from nemo.lens._core import state as _state
from nemo.lens._core.spans import SpanScope, end_span, start_span
from nemo.lens._names import signature_of

__all__ = ["trace_fn"]

_F = TypeVar("_F", bound=Callable[..., Any])


# --- trace_fn -----------------------------------------------------------------------------------


@signature_of(_signatures.trace_fn)
def trace_fn(group: str, name: str, tracer: Tracer | None = None) -> Callable[[_F], _F]:
    """Decorate a function so each call is traced as span ``name`` when ``group`` is enabled.

    The group is checked on every call, not at decoration, so functions decorated
    at import time start tracing once set-up enables their group. A disabled call
    costs one set lookup before calling straight through.

    The span covers the real execution: for a coroutine function, the awaited run;
    for a generator or async generator function, from the first item requested to
    exhaustion, ``close()`` or an exception (the group is checked when iteration
    starts). A generator's span is current only while its body runs, never in the
    consumer between items. The wrapper keeps the function's metadata
    (``functools.wraps``) and its kind for :mod:`inspect`.
    """

    if not isinstance(name, str):
        raise TypeError(
            f"trace_fn(group, name) takes the span name as a str, got {type(name).__name__} "
            f"{name!r}"
        )

    def decorate(fn: _F) -> _F:
        if not callable(fn):
            raise TypeError(
                f"trace_fn({group!r}, {name!r}) decorates a function, got "
                f"{type(fn).__name__} {fn!r}; write @trace_fn(group, name) above a def"
            )
        wrapper: Callable[..., Any]
        if inspect.isasyncgenfunction(fn):
            wrapper = _wrap_async_generator(fn, group, name, tracer)
        elif inspect.iscoroutinefunction(fn):
            wrapper = _wrap_coroutine(fn, group, name, tracer)
        elif inspect.isgeneratorfunction(fn):
            wrapper = _wrap_generator(fn, group, name, tracer)
        else:
            wrapper = _wrap_function(fn, group, name, tracer)
        return cast(_F, functools.wraps(fn)(wrapper))

    return decorate


def _wrap_function(
    fn: Callable[..., Any], group: str, name: str, tracer: Tracer | None
) -> Callable[..., Any]:
    mirrored = _wrap_function_mirroring_parameters(fn, group, name, tracer)
    if mirrored is not None:
        return mirrored

    def traced(*args: Any, **kwargs: Any) -> Any:
        if group not in _state.enabled:
            return fn(*args, **kwargs)
        with SpanScope(tracer, name, None, None, None, True, group):
            return fn(*args, **kwargs)

    return traced


# What the generated wrapper calls its own globals; a function with a parameter
# of one of these names gets the generic wrapper instead.
_GENERATED_NAMES: Final = frozenset(
    {"_nl_fn", "_nl_group", "_nl_state", "_nl_scope", "_nl_tracer", "_nl_name"}
)


def _wrap_function_mirroring_parameters(
    fn: Callable[..., Any], group: str, name: str, tracer: Tracer | None
) -> Callable[..., Any] | None:
    """Build a wrapper that declares ``fn``'s own parameters, or ``None`` if it can't.

    A ``*args, **kwargs`` wrapper spends most of a disabled call packing and
    unpacking arguments (about 4.5x a trivial call on CPython 3.11); declaring
    the parameters ``fn`` declares and passing them straight on keeps it near 2x.
    The source is generated, as attrs and dataclasses generate methods. Defaults
    are the very objects ``fn`` holds, so an omitted argument binds as before.
    """
    if not inspect.isfunction(fn):
        return None  # builtins, partials, callable objects: no parameters to mirror
    code = fn.__code__
    names = code.co_varnames
    positional = names[: code.co_argcount]
    keyword_only = names[code.co_argcount : code.co_argcount + code.co_kwonlyargcount]
    index = code.co_argcount + code.co_kwonlyargcount
    var_positional = var_keyword = None
    if code.co_flags & inspect.CO_VARARGS:
        var_positional = names[index]
        index += 1
    if code.co_flags & inspect.CO_VARKEYWORDS:
        var_keyword = names[index]
    if {*positional, *keyword_only, var_positional, var_keyword} & _GENERATED_NAMES:
        return None

    namespace: dict[str, Any] = {
        "_nl_fn": fn,
        "_nl_group": group,
        "_nl_state": _state,
        "_nl_scope": SpanScope,
        "_nl_tracer": tracer,
        "_nl_name": name,
    }
    declared: list[str] = []
    defaults = fn.__defaults__ or ()
    first_default = len(positional) - len(defaults)
    for i, parameter in enumerate(positional):
        if i >= first_default:
            namespace[f"_nl_default_{i}"] = defaults[i - first_default]
            parameter += f"=_nl_default_{i}"
        declared.append(parameter)
        if i + 1 == code.co_posonlyargcount:
            declared.append("/")
    if var_positional is not None:
        declared.append(f"*{var_positional}")
    elif keyword_only:
        declared.append("*")
    keyword_defaults = fn.__kwdefaults__ or {}
    for i, parameter in enumerate(keyword_only):
        if parameter in keyword_defaults:
            namespace[f"_nl_kwdefault_{i}"] = keyword_defaults[parameter]
            declared.append(f"{parameter}=_nl_kwdefault_{i}")
        else:
            declared.append(parameter)
    if var_keyword is not None:
        declared.append(f"**{var_keyword}")

    passed = list(positional)
    if var_positional is not None:
        passed.append(f"*{var_positional}")
    passed += [f"{parameter}={parameter}" for parameter in keyword_only]
    if var_keyword is not None:
        passed.append(f"**{var_keyword}")
    call = f"_nl_fn({', '.join(passed)})"

    # Named `traced` here; functools.wraps then gives it fn's name and qualname,
    # which is what argument errors quote.
    source = (
        f"def traced({', '.join(declared)}):\n"
        f"    if _nl_group not in _nl_state.enabled:\n"
        f"        return {call}\n"
        f"    with _nl_scope(_nl_tracer, _nl_name, None, None, None, True, _nl_group):\n"
        f"        return {call}\n"
    )
    filename = _wrapper_filename(fn)
    exec(compile(source, filename, "exec"), namespace)
    # Registered like a file of its own, so a traceback through the wrapper shows its
    # lines (as dataclasses and attrs do for the methods they generate).
    linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
    traced: Callable[..., Any] = namespace["traced"]
    return traced


def _wrapper_filename(fn: Callable[..., Any]) -> str:
    # Unique per wrapped function, so two wrappers of the same name keep their own lines.
    return f"<nemo.lens trace_fn wrapper of {fn.__module__}.{fn.__qualname__} {id(fn):#x}>"


def _wrap_coroutine(
    fn: Callable[..., Any], group: str, name: str, tracer: Tracer | None
) -> Callable[..., Any]:

    async def traced(*args: Any, **kwargs: Any) -> Any:
        if group not in _state.enabled:
            return await fn(*args, **kwargs)
        # The context stays attached across the awaits: they all run in this
        # task's own context, which is exactly where the span should be current.
        with SpanScope(tracer, name, None, None, None, True, group):
            return await fn(*args, **kwargs)

    return traced


class _Closing:
    """A traced generator's body closing: its span current meanwhile, then ended with
    what the closing raised (``None`` when it finished), even when it raised."""

    __slots__ = ("_context", "_span", "_token")

    def __init__(self, span: Span | None, span_context: _context.Context | None) -> None:
        self._span = span
        self._context = span_context

    def __enter__(self) -> None:
        self._token = None if self._context is None else _context.attach(self._context)

    def __exit__(self, exc_type: object, error: BaseException | None, tb: object) -> None:
        try:
            if self._span is not None:
                end_span(self._span, error)
        finally:
            if self._token is not None:
                _context.detach(self._token)


def _wrap_generator(
    fn: Callable[..., Any], group: str, name: str, tracer: Tracer | None
) -> Callable[..., Any]:

    def traced(*args: Any, **kwargs: Any) -> Generator[Any, Any, Any]:
        if group not in _state.enabled:
            return (yield from fn(*args, **kwargs))
        inner: Generator[Any, Any, Any] = fn(*args, **kwargs)
        span = start_span(tracer, name, None, None, None, group)
        # Made current around each resumption of the body only: attaching once
        # across a yield would leak the span into the consumer's code.
        span_context = _trace.set_span_in_context(span)
        sent: Any = None
        thrown: BaseException | None = None
        while True:
            token = _context.attach(span_context)
            try:
                if thrown is None:
                    item = inner.send(sent)
                else:
                    item, thrown = inner.throw(thrown), None
            except StopIteration as stop:
                end_span(span, None)
                return stop.value
            except BaseException as error:
                end_span(span, error)
                raise
            finally:
                _context.detach(token)
            try:
                sent = yield item
            except GeneratorExit:
                # close(), or the consumer dropped us: close the body (running its
                # finally blocks under the span), then end the span.
                with _Closing(span, span_context):
                    inner.close()
                raise
            except BaseException as error:
                # throw() from the consumer: deliver it to the body on the next turn.
                thrown, sent = error, None

    return traced


def _wrap_async_generator(
    fn: Callable[..., Any], group: str, name: str, tracer: Tracer | None
) -> Callable[..., Any]:

    async def traced(*args: Any, **kwargs: Any) -> AsyncGenerator[Any, Any]:
        inner: AsyncGenerator[Any, Any] = fn(*args, **kwargs)
        # Async generators have no `yield from`, so a disabled call forwards by
        # hand too (asend/athrow/aclose must reach the body either way).
        span = (
            start_span(tracer, name, None, None, None, group) if group in _state.enabled else None
        )
        span_context = None if span is None else _trace.set_span_in_context(span)
        sent: Any = None
        thrown: BaseException | None = None
        while True:
            token = None if span_context is None else _context.attach(span_context)
            try:
                if thrown is None:
                    item = await inner.asend(sent)
                else:
                    item, thrown = await inner.athrow(thrown), None
            except StopAsyncIteration:
                if span is not None:
                    end_span(span, None)
                return
            except BaseException as error:
                if span is not None:
                    end_span(span, error)
                raise
            finally:
                if token is not None:
                    _context.detach(token)
            try:
                sent = yield item
            except GeneratorExit:
                with _Closing(span, span_context):
                    await inner.aclose()
                raise
            except BaseException as error:
                thrown, sent = error, None

    return traced
