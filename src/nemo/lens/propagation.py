"""W3C trace-context and baggage propagation across processes.

A carrier is a ``dict[str, str]`` of W3C headers. A remote context is either continued (its
span becomes the parent here: :func:`continue_trace`) or linked (:func:`create_linked_span`).
The W3C propagators are used directly, whatever ``OTEL_PROPAGATORS`` says; receiving never
fails: a bad carrier gives a context without a remote span.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping, MutableMapping
from contextlib import contextmanager
from typing import Any, TypeAlias, overload

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.baggage.propagation import W3CBaggagePropagator
from opentelemetry.context import Context
from opentelemetry.propagators.composite import CompositePropagator
from opentelemetry.trace import Link, NonRecordingSpan, Span, SpanContext, SpanKind, Tracer
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

__all__ = [
    "RemoteContext",
    "continue_trace",
    "create_linked_span",
    "extract_context",
    "inject_context",
    "remote_span_context",
]

_logger = logging.getLogger(__name__)

_PROPAGATOR = CompositePropagator([TraceContextTextMapPropagator(), W3CBaggagePropagator()])

RemoteContext: TypeAlias = Mapping[str, str] | Context | SpanContext | Span | None
"""What names a remote span: a W3C carrier, a context, a span context or a span."""


def clean_carrier(carrier: object) -> dict[str, str]:
    """The ``str`` -> ``str`` entries of an untrusted *carrier*, keys lower-cased (the W3C
    propagators look up exact lower-case keys, assume string values and raise otherwise)."""
    if not isinstance(carrier, Mapping):
        return {}
    try:
        return {
            key.lower(): value
            for key, value in carrier.items()
            if isinstance(key, str) and isinstance(value, str)
        }
    except Exception:  # a mapping whose iteration fails is garbage too
        return {}


def inject_context(
    carrier: MutableMapping[str, str] | None = None, context: Context | None = None
) -> MutableMapping[str, str]:
    """Write the current (or the given) trace context and baggage into *carrier*.

    Returns the carrier (a new ``dict`` when none is given). Without a valid span
    in the context no ``traceparent`` is written (baggage still is, if any), so
    the receiver starts a trace of its own.
    """
    out: MutableMapping[str, str] = {} if carrier is None else carrier
    _PROPAGATOR.inject(out, context=context)
    return out


def extract_context(carrier: object, context: Context | None = None) -> Context:
    """Return *context* (default: an empty one) with the remote span and baggage of *carrier*.

    Use it as the ``context=`` of a new span to continue the remote trace. A missing or
    malformed carrier gives *context* unchanged, never an exception.
    """
    clean = clean_carrier(carrier)
    base = Context() if context is None else context
    if not clean:
        return base
    try:
        return _PROPAGATOR.extract(clean, context=base)
    except Exception:  # the propagators are lenient; this is the last line of defence
        _logger.debug("nemo.lens: ignoring a trace-context carrier that failed to parse")
        return base


def remote_span_context(remote: object) -> SpanContext:
    """Return the :class:`SpanContext` that *remote* names (invalid when it names none).

    *remote* is a carrier, a :class:`~opentelemetry.context.Context`, a
    :class:`SpanContext` or a :class:`Span`; anything else names no span.
    """
    if isinstance(remote, SpanContext):
        return remote
    if isinstance(remote, Span):
        return remote.get_span_context()
    if isinstance(remote, Context):
        return trace.get_current_span(remote).get_span_context()
    return trace.get_current_span(extract_context(remote)).get_span_context()


@contextmanager
def continue_trace(remote: RemoteContext) -> Iterator[Context]:
    """Make *remote*'s span the current parent for the body of a ``with`` block.

    Spans started inside become children of the remote span and see its baggage. *remote*
    is a carrier, a context, a span context or a span. When it names no valid span
    (``None`` because torch is absent, an empty or corrupt carrier) the current context
    stays in force. Yields the context in force.
    """
    current = otel_context.get_current()
    if isinstance(remote, Context):
        target = remote
    elif isinstance(remote, (SpanContext, Span)):
        span_context = remote_span_context(remote)
        target = (
            trace.set_span_in_context(NonRecordingSpan(span_context), current)
            if span_context.is_valid
            else current
        )
    else:
        target = extract_context(remote, context=current)
    token = otel_context.attach(target)
    try:
        yield target
    finally:
        otel_context.detach(token)


@overload
def create_linked_span(
    name: str,
    remote: RemoteContext = None,
    tracer: Tracer | None = None,
    *,
    kind: SpanKind = SpanKind.INTERNAL,
    group: str | None = None,
    **attributes: object,
) -> Span: ...


@overload
def create_linked_span(
    tracer: Tracer,
    name: str,
    remote_context: Context | None = None,
    remote_carrier: Mapping[str, str] | None = None,
    *,
    kind: SpanKind = SpanKind.INTERNAL,
    group: str | None = None,
    **attributes: object,
) -> Span: ...


def create_linked_span(*args: Any, **kwargs: Any) -> Span:
    """Start span *name* linked (not parented) to the span that *remote* names.

    ``create_linked_span(name, remote, tracer=None, *, kind=INTERNAL, group=None, **attributes)``

    The parent is the caller's current span; the remote span (a carrier, a context, a span
    context or a span) is attached as a link, when valid. Attributes are filtered and
    redacted as by :func:`nemo.lens.safe_set_span_attributes`. *group* tags the span with
    ``lens.group`` and ``lens.span_category`` but does not gate it. ``tracer=None`` uses
    nemo.lens's default tracer. The span is not made current: end it yourself, or use
    ``opentelemetry.trace.use_span(span, end_on_exit=True)``.

    The 0.1.0 form ``create_linked_span(tracer, name, remote_context=None,
    remote_carrier=None, **attributes)`` is accepted too.
    """
    tracer, name, remote, kind, group, attributes = _linked_span_arguments(args, kwargs)
    from nemo.lens._core.spans import start_span

    peer = remote_span_context(remote)
    links = [Link(peer)] if peer.is_valid else None
    return start_span(tracer, name, kind, links, attributes, group)


_NEW_FORM = ("name", "remote", "tracer")
_OLD_FORM = ("tracer", "name", "remote_context", "remote_carrier")


def _linked_span_arguments(
    args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[Tracer | None, str, object, SpanKind, str | None, dict[str, object]]:
    """Bind either call form of :func:`create_linked_span` to its parameters."""
    names = _OLD_FORM if args and isinstance(args[0], Tracer) else _NEW_FORM
    if len(args) > len(names):
        raise TypeError(
            f"create_linked_span() takes at most {len(names)} positional arguments "
            f"({', '.join(names)}), got {len(args)}; pass attributes as keywords"
        )
    bound = dict(kwargs)
    for parameter, value in zip(names, args, strict=False):
        if parameter in bound:
            raise TypeError(f"create_linked_span() got multiple values for {parameter!r}")
        bound[parameter] = value
    name = bound.pop("name", None)
    if not isinstance(name, str):
        raise TypeError(f"create_linked_span() needs the span name as a str, got {name!r}")
    tracer = bound.pop("tracer", None)
    if tracer is not None and not isinstance(tracer, Tracer):
        raise TypeError(
            f"create_linked_span(tracer=...) must be an OpenTelemetry Tracer or None, got "
            f"{type(tracer).__name__}"
        )
    kind = bound.pop("kind", SpanKind.INTERNAL)
    if not isinstance(kind, SpanKind):
        raise TypeError(f"create_linked_span(kind=...) must be a SpanKind, got {kind!r}")
    group = bound.pop("group", None)
    if group is not None and not isinstance(group, str):
        raise TypeError(f"create_linked_span(group=...) must be a span-group name, got {group!r}")
    remote: object = None
    for source in ("remote", "remote_context", "remote_carrier"):
        value = bound.pop(source, None)
        if remote is None and value is not None:
            remote = value
    return tracer, name, remote, kind, group, bound
