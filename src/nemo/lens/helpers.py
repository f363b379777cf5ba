"""Instrumentation primitives: group-gated spans, a tracing decorator, attribute hygiene.

Every gated primitive costs one ``frozenset`` membership test when its group is
disabled, and then touches nothing of OpenTelemetry: :func:`managed_span` hands
back one shared, pre-built no-op context manager and :func:`trace_fn` calls
straight through to the wrapped function.

The implementations live in :mod:`nemo.lens._core` (:mod:`~nemo.lens._core.spans`,
:mod:`~nemo.lens._core.trace_fn`, :mod:`~nemo.lens._core.redaction`), which import
only ``opentelemetry-api``; the SDK stays out of ``import nemo.lens``.
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
