"""Instrumentation primitives: group-gated spans, a tracing decorator, attribute hygiene.

Every gated primitive costs one ``frozenset`` membership test when its group is
disabled, and then touches nothing of OpenTelemetry: :func:`managed_span` hands
back one shared, pre-built no-op context manager and :func:`trace_fn` calls
straight through to the wrapped function.

This module imports only ``opentelemetry-api``; the SDK stays out of
``import nemo.lens`` (set-up imports it when telemetry is enabled).

Exceptions and spans
    An :class:`Exception` raised in a span's body is recorded on the span (an
    ``exception`` event) and sets its status to ERROR, then propagates. Anything
    else derived from :class:`BaseException` (``KeyboardInterrupt``,
    ``SystemExit``, ``GeneratorExit``, ``asyncio.CancelledError``) is control
    flow, not a failure of the traced work: the span ends with its status left
    as it was and the exception propagates. This matches
    ``opentelemetry.trace.use_span``. In every case the span ends and the
    context it was made current in is detached.

Redaction
    A ``str`` value (or the ``str`` items of a list or tuple) is replaced with
    ``"[REDACTED]"`` when its key is a redact key. Keys match case-insensitively,
    either as a whole or by their last dot-separated segment, so ``prompt``,
    ``Prompt`` and ``llm.prompt`` are all redacted while ``prompt_tokens`` and
    ``cache_key`` are not.

The default tracer
    With ``tracer=None`` the primitives use a tracer of scope ``nemo.lens``
    (with the package version) from the provider set-up installed, or, before
    set-up, from OpenTelemetry's global provider. The tracer is cached, never
    looked up per call, and follows a change of either provider.
"""

from __future__ import annotations

import functools
import inspect
import logging
import threading
import traceback
from collections.abc import AsyncGenerator, Callable, Generator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from contextlib import AbstractContextManager
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final, TypeVar, cast

from opentelemetry import context as _context
from opentelemetry import trace as _trace
from opentelemetry.trace import Link, Span, SpanKind, Tracer, TracerProvider
from opentelemetry.trace.status import Status, StatusCode
from opentelemetry.util.types import AttributeValue

from nemo.lens import _signatures
from nemo.lens import semconv as _semconv
from nemo.lens import state as _state
from nemo.lens._names import signature_of
from nemo.lens.semconv import SCOPE_NAME as _SCOPE_NAME

__all__ = [
    "DEFAULT_REDACT_KEYS",
    "managed_span",
    "redact_value",
    "safe_set_span_attributes",
    "span_cm",
    "trace_fn",
]

_F = TypeVar("_F", bound=Callable[..., Any])
_T = TypeVar("_T")

DEFAULT_REDACT_KEYS: Final[frozenset[str]] = frozenset(
    {
        "prompt",
        "input_text",
        "output_text",
        "text",
        "password",
        "token",
        "secret",
        "key",
        "api_key",
        "access_token",
        "authorization",
        "hf_token",
        "aws_secret_access_key",
    }
)
"""Attribute keys whose ``str`` values are replaced with ``"[REDACTED]"`` by default."""

_REDACTED: Final = "[REDACTED]"
_INTERNAL: Final = SpanKind.INTERNAL

_logger = logging.getLogger(__name__)


# --- redaction and attribute cleaning ---------------------------------------------------------

# Attribute keys are nearly always literals at the call site, so the redaction
# decision for the default keys is memoised per key. The bound keeps a program
# that builds keys dynamically from growing it without limit.
_DEFAULT_DECISIONS: dict[str, bool] = {}
_DEFAULT_DECISIONS_MAX: Final = 4096


def _matches(key: str, lowered_keys: AbstractSet[str]) -> bool:
    if not isinstance(key, str):  # the SDK drops such a key itself, with a warning
        return False
    lowered = key.lower()
    if lowered in lowered_keys:
        return True
    _, dot, last = lowered.rpartition(".")
    return bool(dot) and last in lowered_keys


def _is_redact_key(key: str, redact_keys: AbstractSet[str]) -> bool:
    if redact_keys is DEFAULT_REDACT_KEYS:
        decision = _DEFAULT_DECISIONS.get(key)
        if decision is None:
            decision = _matches(key, DEFAULT_REDACT_KEYS)
            if len(_DEFAULT_DECISIONS) >= _DEFAULT_DECISIONS_MAX:
                _DEFAULT_DECISIONS.clear()
            _DEFAULT_DECISIONS[key] = decision
        return decision
    # Caller-supplied keys may be spelled in any case; lower them so the match is
    # case-insensitive on both sides.
    return _matches(key, {k.lower() for k in redact_keys})


def redact_value(key: str, value: _T, redact_keys: AbstractSet[str] = DEFAULT_REDACT_KEYS) -> _T:
    """Return ``value`` with its text hidden when ``key`` is a redact key.

    A ``str`` becomes ``"[REDACTED]"``; a list or tuple comes back as the same
    kind of sequence with its ``str`` items replaced. Anything else, and every
    value under a key that is not a redact key, is returned unchanged. Keys match
    case-insensitively, as a whole or by their last dot-separated segment
    (``llm.prompt`` matches ``prompt``).
    """
    if not _is_redact_key(key, redact_keys):
        return value
    if isinstance(value, str):
        return cast(_T, _REDACTED)
    if isinstance(value, (list, tuple)):
        hidden = [_REDACTED if isinstance(item, str) else item for item in value]
        return cast(_T, hidden if isinstance(value, list) else tuple(hidden))
    return value


def _scalar_kind(value: object) -> type | None:
    # bool first: it is a subclass of int but a different attribute type.
    if isinstance(value, bool):
        return bool
    if isinstance(value, int):
        return int
    if isinstance(value, float):
        return float
    if isinstance(value, str):
        return str
    return None


# Attribute values the primitives dropped, per thread so that counting takes no
# lock (see _dropped_attribute_values); reported in the summary at shutdown.
_DROPPED_VALUES: dict[int, int] = {}
_drop_warned = threading.Lock()


def _dropped_attribute_values() -> int:
    """How many attribute values the primitives have dropped in this process."""
    return sum(list(_DROPPED_VALUES.values()))


def _drop_value(key: object, value: object) -> None:
    ident = threading.get_ident()
    _DROPPED_VALUES[ident] = _DROPPED_VALUES.get(ident, 0) + 1
    if _drop_warned.acquire(blocking=False):
        _logger.warning(
            "nemo.lens: span attribute %r holds a %s, which span attributes cannot hold (use a "
            "str, bool, int, float or a list of one of them); it was dropped. Further drops "
            "are counted and reported at shutdown.",
            key,
            type(value).__name__,
        )


def _clean_attributes(
    attributes: Mapping[str, object], redact_keys: AbstractSet[str]
) -> dict[str, AttributeValue]:
    cleaned: dict[str, AttributeValue] = {}
    for key, value in attributes.items():
        if value is None:
            continue
        if isinstance(value, (bool, int, float)):
            cleaned[key] = value
        elif isinstance(value, str):
            cleaned[key] = _REDACTED if _is_redact_key(key, redact_keys) else value
        elif isinstance(value, (list, tuple)):
            items = _clean_sequence(value)
            if items is not None:
                cleaned[key] = redact_value(key, items, redact_keys)
            else:
                _drop_value(key, value)
        else:
            # Anything else (dicts, objects, nested or mixed sequences) is dropped:
            # exporters and backends only agree on scalars and homogeneous arrays.
            _drop_value(key, value)
    return cleaned


def _clean_sequence(value: list[object] | tuple[object, ...]) -> list[Any] | None:
    kind: type | None = None
    for item in value:
        item_kind = _scalar_kind(item)
        if item_kind is None or (kind is not None and item_kind is not kind):
            return None
        kind = item_kind
    return list(value)


def safe_set_span_attributes(
    span: Span | None,
    attributes: Mapping[str, object] | None,
    redact_keys: AbstractSet[str] = DEFAULT_REDACT_KEYS,
) -> None:
    """Set ``attributes`` on ``span``, keeping only what OpenTelemetry can carry.

    Does nothing when ``span`` is ``None`` or not recording. ``None`` values are
    skipped; ``bool``, ``int``, ``float`` and ``str`` values are set; lists and
    tuples whose items are all scalars of one type are set as lists; anything
    else is dropped. ``str`` values (and ``str`` items) under a redact key become
    ``"[REDACTED]"`` (see :func:`redact_value` for how keys match).
    """
    if span is None or not attributes or not span.is_recording():
        return
    cleaned = _clean_attributes(attributes, redact_keys)
    if cleaned:
        span.set_attributes(cleaned)


# --- the default tracer -------------------------------------------------------------------------

# The tracer of the provider set-up installed, if any (see _use_tracer_provider).
_installed_provider: TracerProvider | None = None
_installed_tracer: Tracer | None = None

# (global provider it came from, tracer): rebound as one tuple so a reader never
# pairs a provider with another provider's tracer.
_global_tracer: tuple[object, Tracer] | None = None

# Reading OpenTelemetry's global slot is a ~20 ns attribute load, against ~60 ns
# (set) to ~800 ns (unset: it consults os.environ) for get_tracer_provider(). The
# slot is private, so fall back to the public call if a release renames it.
_HAS_GLOBAL_SLOT: Final = hasattr(_trace, "_TRACER_PROVIDER")


def _scope_version() -> str:
    # Imported here, not at module level: nemo.lens/__init__ imports this module.
    from nemo.lens import __version__

    return __version__


def _use_tracer_provider(provider: TracerProvider | None) -> None:
    """Make ``provider`` the source of the default tracer (``None``: the global one).

    Called by set-up after it installs a provider and by shutdown (with ``None``)
    after it removes it; ``nemo.lens.testing.capture_spans`` uses it too.
    """
    global _installed_provider, _installed_tracer, _global_tracer
    tracer = None if provider is None else provider.get_tracer(_SCOPE_NAME, _scope_version())
    _installed_provider = provider
    _installed_tracer = tracer
    _global_tracer = None


def _global_provider_key() -> object:
    if _HAS_GLOBAL_SLOT:
        return cast(object, _trace._TRACER_PROVIDER)
    return _trace.get_tracer_provider()


def _default_tracer() -> Tracer:
    """Return the tracer used when a primitive is given ``tracer=None``."""
    tracer = _installed_tracer
    if tracer is not None:
        return tracer
    cached = _global_tracer
    if cached is not None and cached[0] is _global_provider_key():
        return cached[1]
    return _refresh_global_tracer()


def _refresh_global_tracer() -> Tracer:
    global _global_tracer
    # Read the key before the lookup: if the global provider changes in between
    # (another thread, or get_tracer_provider() installing the provider named by
    # OTEL_PYTHON_TRACER_PROVIDER), the stored key is the old one and the next call
    # refreshes again; read after, an old tracer could be filed under the new key.
    key = _global_provider_key()
    tracer = _trace.get_tracer_provider().get_tracer(_SCOPE_NAME, _scope_version())
    _global_tracer = (key, tracer)
    return tracer


# --- span scopes --------------------------------------------------------------------------------


def _span_attributes(
    attributes: Mapping[str, object] | None, group: str | None
) -> Mapping[str, AttributeValue] | None:
    """The attributes a span starts with: *attributes* cleaned, then *group*'s tags.

    The tags (``lens.group``, ``lens.span_category``) were built when the
    configuration last changed (see :func:`nemo.lens.state.group_tags`); they go
    last so a caller's attribute of the same name cannot mislabel the span, and
    without other attributes they are passed as they are, copying nothing.
    """
    tags: Mapping[str, str] | None = None
    if group is not None:
        tags = _state._tags.get(group)
        if tags is None:
            tags = _state.group_tags(group)
    if not attributes:
        return tags
    cleaned = _clean_attributes(attributes, DEFAULT_REDACT_KEYS)
    if tags is not None:
        cleaned.update(tags)
    return cleaned


def _start_span(
    tracer: Tracer | None,
    name: str,
    kind: SpanKind | None,
    links: Sequence[Link] | None,
    attributes: Mapping[str, object] | None,
    group: str | None = None,
) -> Span:
    if tracer is None:
        tracer = _default_tracer()
    # Attributes go in at start, not after, so samplers can see them; they are
    # filtered and redacted exactly as safe_set_span_attributes would.
    return tracer.start_span(
        name,
        kind=_INTERNAL if kind is None else kind,
        attributes=_span_attributes(attributes, group),
        links=links,
    )


def _end_span(span: Span, error: BaseException | None, record_exception: bool = True) -> None:
    try:
        if isinstance(error, Exception) and span.is_recording():
            # Nothing here may raise: an exception from recording the job's own
            # exception would replace it on its way to the caller.
            message = _exception_message(error)
            if record_exception:
                _record_exception(span, error, message)
            try:
                span.set_status(Status(StatusCode.ERROR, f"{type(error).__name__}: {message}"))
            except Exception:
                _logger.debug("nemo.lens: setting the span's error status failed", exc_info=True)
    finally:
        span.end()


def _exception_message(error: BaseException) -> str:
    """``str(error)``, or a stand-in when the exception's own ``__str__`` raises."""
    try:
        return str(error)
    except Exception as failure:
        try:
            why = f"{type(failure).__name__}"
        except Exception:  # pragma: no cover - beyond any reasonable exception
            why = "an exception"
        return f"<exception str() failed: {why}>"


def _record_exception(span: Span, error: BaseException, message: str) -> None:
    """The SDK's ``record_exception``; by hand when that fails on *error* (its ``__str__``)."""
    try:
        span.record_exception(error)
        return
    except Exception:
        pass
    try:
        stacktrace = "".join(traceback.format_exception(type(error), error, error.__traceback__))
    except Exception:
        stacktrace = ""
    kind = type(error)
    module = kind.__module__
    exception_type = (
        f"{module}.{kind.__qualname__}" if module not in ("", "builtins") else (kind.__qualname__)
    )
    try:
        span.add_event(
            "exception",
            {
                _semconv.EXCEPTION_TYPE: exception_type,
                _semconv.EXCEPTION_MESSAGE: message,
                _semconv.EXCEPTION_STACKTRACE: stacktrace,
                _semconv.EXCEPTION_ESCAPED: "False",
            },
        )
    except Exception:
        _logger.debug("nemo.lens: recording the exception on the span failed", exc_info=True)


def _builtin_no_op() -> Callable[..., None] | None:
    """``None.__init__`` if it takes any arguments and returns ``None``, else ``None``.

    ``object.__init__`` ignores its arguments for a type that overrides
    ``__new__`` but not ``__init__``, as ``NoneType`` does; checked here, not
    assumed, so another interpreter gets the plain methods instead.
    """
    # mypy's caution about __init__ on an instance is for subclasses; NoneType has none.
    candidate: Callable[..., object] = None.__init__  # type: ignore[misc]
    try:
        works = candidate() is None and candidate(None, None, None, None) is None
    except TypeError:
        return None
    return cast("Callable[..., None]", candidate) if works else None


_ANY_ARGUMENTS_TO_NONE: Final = _builtin_no_op()


class _DisabledScope:
    """The one context manager every disabled :func:`managed_span` returns.

    Its ``__enter__`` and ``__exit__`` are one builtin (``None.__init__``, bound
    to ``None``) rather than Python methods. A bound builtin is not a
    descriptor, so the ``with`` statement calls it as found on the class: no
    bound-method object is allocated (two per block otherwise) and no Python
    frame runs. It takes whatever it is given -- nothing from ``with``, the
    scope itself from ``ExitStack.enter_context``, three exception values on
    exit -- and returns ``None``: ``as`` binds ``None``, and an exception from
    the body propagates. On CPython 3.11 this takes a disabled ``managed_span``
    block from about 0.84x to about 0.6x the cost of ``with
    contextlib.nullcontext(): pass`` and makes it allocate nothing (``python -m
    bench`` measures both).
    """

    __slots__ = ()

    if TYPE_CHECKING or _ANY_ARGUMENTS_TO_NONE is None:

        def __enter__(self) -> None:
            return None

        def __exit__(
            self,
            exc_type: type[BaseException] | None,
            exc: BaseException | None,
            tb: TracebackType | None,
        ) -> None:
            return None

    else:
        __enter__ = __exit__ = _ANY_ARGUMENTS_TO_NONE

    def __repr__(self) -> str:
        return "<nemo.lens disabled span>"


_DISABLED: Final = _DisabledScope()


class _SpanScope:
    """Starts a span on enter, makes it current, and ends and detaches it on exit.

    A class rather than ``@contextmanager``: no generator frame per span, which
    keeps an enabled span as cheap as OpenTelemetry's own ``start_as_current_span``.
    Single use, like that one: each call of a primitive builds a fresh scope.
    """

    __slots__ = (
        "_attributes",
        "_group",
        "_kind",
        "_links",
        "_name",
        "_record",
        "_span",
        "_token",
        "_tracer",
    )

    def __init__(
        self,
        tracer: Tracer | None,
        name: str,
        kind: SpanKind | None,
        links: Sequence[Link] | None,
        attributes: Mapping[str, object] | None,
        record_exception: bool,
        group: str | None,
    ) -> None:
        self._tracer = tracer
        self._name = name
        self._kind = kind
        self._links = links
        self._attributes = attributes
        self._record = record_exception
        self._group = group

    def __enter__(self) -> Span:
        span = _start_span(
            self._tracer, self._name, self._kind, self._links, self._attributes, self._group
        )
        self._token = _context.attach(_trace.set_span_in_context(span))
        self._span = span
        return span

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            _context.detach(self._token)
        finally:
            _end_span(self._span, exc, self._record)


# Type checkers see the generated signature, which takes only the schema's group
# names (or a DynamicSpanGroup); the function itself takes any str.
@signature_of(_signatures.managed_span)
def managed_span(
    group: str,
    name: str,
    tracer: Tracer | None = None,
    *,
    kind: SpanKind | None = None,
    links: Sequence[Link] | None = None,
    **attributes: object,
) -> AbstractContextManager[Span | None]:
    """Trace the body of a ``with`` block as span ``name`` when ``group`` is enabled.

    Enabled, it starts a span of ``kind`` (``None`` means ``SpanKind.INTERNAL``)
    with ``links`` and ``attributes`` (filtered and redacted as by
    :func:`safe_set_span_attributes`), makes it current, and yields it; see the
    module docstring for exceptions. Disabled, it returns a shared no-op context
    manager that yields ``None``, so code that adds attributes checks first::

        with managed_span(SpanGroup.STEP, "train.step", iteration=it) as span:
            loss = train_step()
            if span is not None:
                span.set_attribute("loss", loss)

    The span carries ``lens.group`` (*group*) and ``lens.span_category`` (its
    category; see :mod:`nemo.lens.semconv`). ``tracer=None`` uses the cached
    ``nemo.lens`` tracer. Attributes named ``group``, ``name``, ``tracer``,
    ``kind`` or ``links`` cannot be passed as keywords; set them on the yielded span.
    """
    if group not in _state._enabled:
        return _DISABLED
    if kind is not None and not isinstance(kind, SpanKind):
        # Caught here, at the call site: the SDK would accept it and fail at export.
        raise TypeError(
            f"managed_span(kind=...) takes an opentelemetry.trace.SpanKind such as "
            f"SpanKind.SERVER, got {kind!r}"
        )
    if links is not None:
        _check_links("managed_span", links)
    return _SpanScope(tracer, name, kind, links, attributes, True, group)


def _check_links(caller: str, links: object) -> None:
    """Raise a ``TypeError`` naming *caller* unless *links* is a sequence of ``Link``."""
    if isinstance(links, Link):
        raise TypeError(
            f"{caller}(links=...) takes a sequence of opentelemetry.trace.Link, got one Link; "
            "pass links=[link]"
        )
    if isinstance(links, (str, bytes)) or not isinstance(links, Sequence):
        raise TypeError(
            f"{caller}(links=...) takes a sequence of opentelemetry.trace.Link, got "
            f"{type(links).__name__} {links!r}"
        )
    for index, link in enumerate(links):
        if not isinstance(link, Link):
            raise TypeError(
                f"{caller}(links=...) takes a sequence of opentelemetry.trace.Link, but item "
                f"{index} is {type(link).__name__} {link!r}; make one with "
                "Link(span.get_span_context())"
            )


def span_cm(
    name: str,
    tracer: Tracer | None = None,
    record_exception: bool = True,
    group: str | None = None,
    **attributes: object,
) -> AbstractContextManager[Span]:
    """Trace the body of a ``with`` block as span ``name``, whatever groups are enabled.

    Yields the span (a non-recording one when no provider is installed or the
    sampler drops it). An :class:`Exception` in the body sets status ERROR and
    propagates; with ``record_exception=False`` no ``exception`` event is added.
    *group* only tags the span (``lens.group``, ``lens.span_category``): it
    never gates it, so the span is made whether or not the group is enabled.
    """
    if group is not None and not isinstance(group, str):
        raise TypeError(f"span_cm(group=...) takes a span-group name (a str), got {group!r}")
    return _SpanScope(tracer, name, None, None, attributes, record_exception, group)


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
        if group not in _state._enabled:
            return fn(*args, **kwargs)
        with _SpanScope(tracer, name, None, None, None, True, group):
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
        "_nl_scope": _SpanScope,
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
        f"    if _nl_group not in _nl_state._enabled:\n"
        f"        return {call}\n"
        f"    with _nl_scope(_nl_tracer, _nl_name, None, None, None, True, _nl_group):\n"
        f"        return {call}\n"
    )
    exec(compile(source, f"<nemo.lens trace_fn wrapper of {fn.__qualname__}>", "exec"), namespace)
    traced: Callable[..., Any] = namespace["traced"]
    return traced


def _wrap_coroutine(
    fn: Callable[..., Any], group: str, name: str, tracer: Tracer | None
) -> Callable[..., Any]:

    async def traced(*args: Any, **kwargs: Any) -> Any:
        if group not in _state._enabled:
            return await fn(*args, **kwargs)
        # The context stays attached across the awaits: they all run in this
        # task's own context, which is exactly where the span should be current.
        with _SpanScope(tracer, name, None, None, None, True, group):
            return await fn(*args, **kwargs)

    return traced


def _wrap_generator(
    fn: Callable[..., Any], group: str, name: str, tracer: Tracer | None
) -> Callable[..., Any]:

    def traced(*args: Any, **kwargs: Any) -> Generator[Any, Any, Any]:
        if group not in _state._enabled:
            return (yield from fn(*args, **kwargs))
        inner: Generator[Any, Any, Any] = fn(*args, **kwargs)
        span = _start_span(tracer, name, None, None, None, group)
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
                _end_span(span, None)
                return stop.value
            except BaseException as error:
                _end_span(span, error)
                raise
            finally:
                _context.detach(token)
            try:
                sent = yield item
            except GeneratorExit:
                # close(), or the consumer dropped us: close the body (running its
                # finally blocks under the span), then end the span without error.
                token = _context.attach(span_context)
                try:
                    inner.close()
                except BaseException as error:
                    _end_span(span, error)
                    raise
                finally:
                    _context.detach(token)
                _end_span(span, None)
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
            _start_span(tracer, name, None, None, None, group) if group in _state._enabled else None
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
                    _end_span(span, None)
                return
            except BaseException as error:
                if span is not None:
                    _end_span(span, error)
                raise
            finally:
                if token is not None:
                    _context.detach(token)
            try:
                sent = yield item
            except GeneratorExit:
                token = None if span_context is None else _context.attach(span_context)
                try:
                    await inner.aclose()
                except BaseException as error:
                    if span is not None:
                        _end_span(span, error)
                    raise
                finally:
                    if token is not None:
                        _context.detach(token)
                if span is not None:
                    _end_span(span, None)
                raise
            except BaseException as error:
                thrown, sent = error, None

    return traced
