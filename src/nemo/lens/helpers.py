"""Instrumentation primitives: group-gated spans, a tracing decorator, attribute hygiene.

A disabled primitive costs one ``frozenset`` test and touches nothing of OpenTelemetry. The
implementations live in :mod:`nemo.lens._core`, which imports only ``opentelemetry-api``.
"""

from __future__ import annotations

# v0.2.0's helpers looked their default tracer up with trace.get_tracer, and its users'
# tests hand tracer=None spans a tracer by monkeypatching nemo.lens.helpers.trace.get_tracer
# (which patches opentelemetry.trace itself): the default tracer honours that
# (nemo.lens._core.state.default_tracer).
from opentelemetry import trace  # noqa: F401 (see above)

from nemo.lens._core.redaction import DEFAULT_REDACT_KEYS, redact_value, safe_set_span_attributes
from nemo.lens._core.spans import managed_span, span_cm
from nemo.lens._core.trace_fn import trace_fn
from nemo.lens._names import rehome

__all__ = [
    "DEFAULT_REDACT_KEYS",
    "managed_span",
    "redact_value",
    "safe_set_span_attributes",
    "span_cm",
    "trace_fn",
]

rehome(globals(), __all__)
