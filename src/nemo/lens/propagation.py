"""W3C trace-context and baggage propagation across processes.

A carrier is a ``dict[str, str]`` of W3C headers (``traceparent``, ``tracestate``,
``baggage``): the form that crosses process boundaries in HTTP headers, RPC
metadata or a ``torch.distributed`` broadcast. These functions use the W3C
propagators directly rather than OpenTelemetry's configurable global propagator,
so the format ranks exchange does not depend on ``OTEL_PROPAGATORS``.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping

from opentelemetry import trace
from opentelemetry.baggage.propagation import W3CBaggagePropagator
from opentelemetry.context import Context
from opentelemetry.propagators.composite import CompositePropagator
from opentelemetry.trace import Link, Span, SpanContext, SpanKind, Tracer
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

__all__ = ["create_linked_span", "extract_context", "inject_context", "remote_span_context"]

_PROPAGATOR = CompositePropagator([TraceContextTextMapPropagator(), W3CBaggagePropagator()])


def inject_context(
    carrier: MutableMapping[str, str] | None = None, context: Context | None = None
) -> MutableMapping[str, str]:
    """Write the current (or the given) trace context and baggage into *carrier*.

    Returns the carrier (a new ``dict`` when none is given); it stays empty when
    there is no valid span in the context.
    """
    out: MutableMapping[str, str] = {} if carrier is None else carrier
    _PROPAGATOR.inject(out, context=context)
    return out


def extract_context(carrier: Mapping[str, str] | None, context: Context | None = None) -> Context:
    """Return a context holding the remote span and baggage of *carrier*.

    Use it as the ``context=`` of a new span to continue the remote trace. A
    missing or malformed carrier gives a context without a remote span, never an
    exception: a bad header must not break the job.
    """
    return _PROPAGATOR.extract(dict(carrier or {}), context=context)


def remote_span_context(carrier: Mapping[str, str] | Context | SpanContext | None) -> SpanContext:
    """The remote :class:`SpanContext` a carrier or context names (invalid when none)."""
    if isinstance(carrier, SpanContext):
        return carrier
    if carrier is None or isinstance(carrier, Context):
        context = carrier
    else:
        context = extract_context(carrier)
    return trace.get_current_span(context).get_span_context()


def create_linked_span(
    name: str,
    remote: Mapping[str, str] | Context | SpanContext | None,
    tracer: Tracer | None = None,
    *,
    kind: SpanKind = SpanKind.INTERNAL,
    **attributes: object,
) -> Span:
    """Start span *name* linked (not parented) to the span that *remote* names.

    The new span's parent is the caller's current span, as usual; the remote span
    (a carrier, a context or a span context) is attached as a link, which is how a
    pipeline stage points at its peer without merging their traces. Without a
    valid remote span the span simply has no link. The span is not made current;
    end it yourself or use ``opentelemetry.trace.use_span(span, end_on_exit=True)``.
    """
    from nemo.lens.helpers import _default_tracer, _start_span

    peer = remote_span_context(remote)
    links = [Link(peer)] if peer.is_valid else None
    return _start_span(tracer or _default_tracer(), name, kind, links, attributes)
