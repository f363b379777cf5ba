"""The current OpenTelemetry context, read and changed the short way.

Every span a primitive makes is made current (so that other instrumentation
parents under it) and detached again: through the API that is
``attach(set_span_in_context(span))`` and ``detach(token)``, seven Python calls
and two copies of the context's dict per span. OpenTelemetry keeps the current
context in one ``ContextVar`` (unless ``OTEL_PYTHON_CONTEXT`` names another
runtime context), and the functions here read and set that variable directly:
the context they attach is the one ``set_span_in_context`` would build, under
the same key, and the token is the one ``attach`` would return, so code using
the API alongside sees no difference. Where the runtime context is another
implementation (or a later API release stores it differently) they go through
the API instead.

Only the OpenTelemetry API is used here.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from contextvars import ContextVar, Token
from typing import Final

from opentelemetry import context as _context_api
from opentelemetry import trace as _trace
from opentelemetry.context import Context
from opentelemetry.context.contextvars_context import ContextVarsRuntimeContext
from opentelemetry.trace import Link, Span, SpanKind, Tracer
from opentelemetry.util._decorator import _agnosticcontextmanager
from opentelemetry.util.types import Attributes

__all__ = [
    "CONTEXT_VARIABLE",
    "DEFAULT_RUNTIME",
    "SPAN_KEY",
    "CurrentSpanTracer",
    "attach_span",
    "current_context",
    "detach",
]

# The API logs a failed detach on this logger; so does detach() here.
_api_logger = logging.getLogger("opentelemetry.context")


def _span_key() -> str:
    # The key set_span_in_context files a span under, learnt through the public API
    # (its name is private to the API).
    keys = list(_trace.set_span_in_context(_trace.INVALID_SPAN, Context()))
    if len(keys) != 1:  # pragma: no cover - an API that stores more than the span
        raise RuntimeError(f"unexpected context layout from set_span_in_context: {keys!r}")
    return keys[0]


SPAN_KEY: Final = _span_key()
"""The key of the current span in an OpenTelemetry :class:`Context`."""


def _runtime() -> object:
    return getattr(_context_api, "_RUNTIME_CONTEXT", None)


def _context_variable() -> ContextVar[Context] | None:
    runtime = _runtime()
    if type(runtime) is not ContextVarsRuntimeContext:
        return None
    variable = getattr(runtime, "_current_context", None)
    return variable if isinstance(variable, ContextVar) else None


# The runtime context and its variable, when the short way applies; checked again
# on every call (one attribute load), so a runtime context replaced later is used
# through the API rather than bypassed.
_RUNTIME: Final = _runtime()
_VARIABLE: Final = _context_variable()

DEFAULT_RUNTIME: Final = _RUNTIME
"""The runtime context of OpenTelemetry when this module was imported."""
CONTEXT_VARIABLE: Final = _VARIABLE
"""The ``ContextVar`` holding the current context while ``opentelemetry.context``'s
runtime is still :data:`DEFAULT_RUNTIME` (``None``: another runtime; use the API).
For a hot path that does what :func:`attach_span` and :func:`detach` do inline."""


def current_context() -> Context:
    """The current context (``opentelemetry.context.get_current()``)."""
    if _VARIABLE is not None and _context_api._RUNTIME_CONTEXT is _RUNTIME:
        return _VARIABLE.get()
    return _context_api.get_current()


def attach_span(span: Span) -> Token[Context]:
    """Make *span* current: ``attach(set_span_in_context(span))``; returns the token."""
    variable = _VARIABLE
    if variable is not None and _context_api._RUNTIME_CONTEXT is _RUNTIME:
        context = Context(variable.get())
        # Context refuses item assignment; this is the copy set_value builds.
        dict.__setitem__(context, SPAN_KEY, span)
        return variable.set(context)
    return _context_api.attach(_trace.set_span_in_context(span))


def detach(token: Token[Context]) -> None:
    """``opentelemetry.context.detach(token)``: a failure is logged, never raised."""
    variable = _VARIABLE
    if variable is not None and _context_api._RUNTIME_CONTEXT is _RUNTIME:
        try:
            variable.reset(token)
        except Exception:
            _api_logger.exception("Failed to detach context")
        return
    _context_api.detach(token)


class CurrentSpanTracer(Tracer):
    """A tracer whose ``start_as_current_span`` is its own ``start_span``, made current.

    As the SDK's tracer does it: the span is made current for the ``with`` block
    and ended after it; used as a decorator, every call of the function gets a
    span of its own (the ``use_span`` of one span made up front would serve them
    all the same span). Subclasses implement ``start_span``.
    """

    @_agnosticcontextmanager
    def start_as_current_span(
        self,
        name: str,
        context: Context | None = None,
        kind: SpanKind = SpanKind.INTERNAL,
        attributes: Attributes = None,
        links: Sequence[Link] | None = None,
        start_time: int | None = None,
        record_exception: bool = True,
        set_status_on_exception: bool = True,
        end_on_exit: bool = True,
    ) -> Iterator[Span]:
        """Start a span with ``start_span`` and make it current for the block."""
        span = self.start_span(
            name,
            context,
            kind,
            attributes,
            links,
            start_time,
            record_exception,
            set_status_on_exception,
        )
        with _trace.use_span(
            span,
            end_on_exit=end_on_exit,
            record_exception=record_exception,
            set_status_on_exception=set_status_on_exception,
        ) as current:
            yield current
