"""Every name nemo.lens emits: attribute keys, metric names and their fixed values.

One ``Final`` string per name, each with a docstring, so an IDE hover shows
what the name means and where its value comes from, and a misspelt name is an
``AttributeError`` (and a mypy error) instead of a silently different attribute.
The library itself uses these constants rather than string literals.

Where an OpenTelemetry semantic convention exists, its name is used
(``service.*``, ``host.name``, ``process.pid``, ``deployment.environment``,
``k8s.*``, ``code.*``, ``exception.*``, ``error.type`` and the GenAI
``gen_ai.*`` metrics and attributes); nemo.lens's own names start with
``nemo.``, and launcher or tool fields without a convention with ``slurm.`` or
``wandb.``. The GenAI names follow the OpenTelemetry GenAI conventions, which
are still in development: if they change, the change lands here, in one place.

This module is plain strings: it imports nothing of OpenTelemetry, so code that
only needs the names (a dashboard generator, a test, a log parser) can import
it anywhere.

Sections:

* instrumentation scope: :data:`SCOPE_NAME`;
* span attributes: :data:`SPAN_GROUP`, :data:`SPAN_CATEGORY`, :data:`SPAN_TRUNCATED`,
  :data:`SPAN_ENCODE_ERROR`, the ``inverted.*`` marks of ``emit_span`` (and
  :data:`LEGACY_SPAN_GROUP`, read only);
* resource attributes: :data:`SERVICE_NAME` ... :data:`K8S_NAMESPACE_NAME`, re-exported
  from :mod:`nemo.lens.semconv.resource` (and importable from
  :mod:`nemo.lens.resources.attributes`);
* logs: the trace-context fields the logging bridge adds to standard-library
  ``logging.LogRecord`` objects (:data:`LOG_TRACE_ID` ...) and the attributes
  it puts on exported log records (``code.*``, ``exception.*``, the latter also on the
  ``exception`` events of spans);
* metric attributes of :mod:`nemo.lens.instruments` (GenAI inference, Gym rollouts);
* metrics: the names of every instrument the recorders create (GenAI inference, RL
  steps, Gym rollouts, and 0.1.0's names as ``LEGACY_*``), re-exported from
  :mod:`nemo.lens.semconv.metrics`, which the schema's ``[metrics]`` catalogue
  generates with each metric's kind, unit, description and bucket boundaries.
"""

from __future__ import annotations

from typing import Final

# The metric names, units and descriptions are the schema's catalogue, generated.
from nemo.lens.semconv import metrics as _metrics
from nemo.lens.semconv import resource as _resource
from nemo.lens.semconv.metrics import *  # noqa: F403
from nemo.lens.semconv.resource import *  # noqa: F403

__all__ = [
    "CODE_FILE_PATH",
    "CODE_FUNCTION_NAME",
    "CODE_LINE_NUMBER",
    "ERROR_TYPE",
    "EXCEPTION_ESCAPED",
    "EXCEPTION_MESSAGE",
    "EXCEPTION_STACKTRACE",
    "EXCEPTION_TYPE",
    "GEN_AI_OPERATION_NAME",
    "GEN_AI_PROVIDER_NAME",
    "GEN_AI_REQUEST_MODEL",
    "GEN_AI_RESPONSE_MODEL",
    "GEN_AI_TOKEN_TYPE",
    "GEN_AI_TOKEN_TYPE_INPUT",
    "GEN_AI_TOKEN_TYPE_OUTPUT",
    "GYM_AGENT",
    "GYM_ENVIRONMENT",
    "GYM_VERIFY_PASSED",
    "INVERTED_DELTA_SECONDS",
    "INVERTED_END_EPOCH_SECONDS",
    "INVERTED_SKEW",
    "INVERTED_START_EPOCH_SECONDS",
    "LEGACY_SPAN_GROUP",
    "LOG_SPAN_ID",
    "LOG_TRACE_ID",
    "LOG_TRACE_SAMPLED",
    "SCOPE_NAME",
    "SPAN_CATEGORY",
    "SPAN_ENCODE_ERROR",
    "SPAN_GROUP",
    "SPAN_TRUNCATED",
    *_resource.__all__,
    *_metrics.__all__,
]

# -- instrumentation scope ------------------------------------------------------------

SCOPE_NAME: Final = "nemo.lens"
"""Instrumentation scope of nemo.lens's own tracer and meter (``get_tracer()``, ``get_meter()``)."""

# -- span attributes ------------------------------------------------------------------

SPAN_GROUP: Final = "lens.group"
"""The span group a span was emitted for: every gated primitive (``managed_span``,
``trace_fn``, the contrib helpers given a ``group``) and ``span_cm``/``emit_span``/
``create_linked_span`` given ``group=``.

Set at span start, so samplers see it. The key the rest of the ecosystem slices by
(resiliency launchers and post-job reckoners emit it too); traces written before
0.2 carry :data:`LEGACY_SPAN_GROUP` instead.
"""

SPAN_CATEGORY: Final = "lens.span_category"
"""The category of the span's group, ``goodput`` or ``profiling``, set with :data:`SPAN_GROUP`.

It comes from the span-group class(es) set-up was configured with
(``NemoLensConfig.span_group_cls``); a group no configured class knows is ``profiling``.
"""

LEGACY_SPAN_GROUP: Final = "nemo.span_group"
"""Where nemo.lens 0.1 and early 0.2 traces kept a span's group (now :data:`SPAN_GROUP`).

Only read: ``nemo-lens summarize`` and ``convert`` fall back to it for older traces.
"""

INVERTED_SKEW: Final = "inverted.skew"
"""``True`` on a span from ``emit_span`` whose end was before its start (clock skew).

The span's end was clamped to its start; the given times are kept in
:data:`INVERTED_START_EPOCH_SECONDS`, :data:`INVERTED_END_EPOCH_SECONDS` and
:data:`INVERTED_DELTA_SECONDS`.
"""
INVERTED_START_EPOCH_SECONDS: Final = "inverted.start_epoch_seconds"
"""The start ``emit_span`` was given for a span marked :data:`INVERTED_SKEW` (epoch seconds)."""
INVERTED_END_EPOCH_SECONDS: Final = "inverted.end_epoch_seconds"
"""The end ``emit_span`` was given for a span marked :data:`INVERTED_SKEW` (epoch seconds)."""
INVERTED_DELTA_SECONDS: Final = "inverted.delta_seconds"
"""End minus start as given, negative, for a span marked :data:`INVERTED_SKEW` (seconds)."""

SPAN_TRUNCATED: Final = "nemo.span.truncated"
"""``True`` on a span that was still open at shutdown and was ended by it.

Its end time is the shutdown time, not the end of the work it traced.
"""

SPAN_ENCODE_ERROR: Final = "nemo.span.encode_error"
"""On the stand-in line the JSON exporters write for a span they could not encode at all
(a custom span object whose fields raise): why. Never seen with the SDK's spans."""

# -- logs -----------------------------------------------------------------------------
# The first three are fields of the standard library's logging.LogRecord (so a
# format string can say %(otelTraceID)s), not OpenTelemetry attributes: their
# spelling is the one opentelemetry-instrumentation-logging made familiar, so
# existing log formats and parsers keep working. Exported log records carry the
# ids in their own trace_id/span_id fields instead.

LOG_TRACE_ID: Final = "otelTraceID"
"""``LogRecord`` field: the current trace id, 32 lower-case hex digits; ``"0"`` outside a span."""
LOG_SPAN_ID: Final = "otelSpanID"
"""``LogRecord`` field: the current span id, 16 lower-case hex digits; ``"0"`` outside a span."""
LOG_TRACE_SAMPLED: Final = "otelTraceSampled"
"""``LogRecord`` field: whether the current span is sampled (``False`` outside a span)."""

CODE_FILE_PATH: Final = "code.file.path"
"""Exported log attribute: the source file that logged (``LogRecord.pathname``)."""
CODE_FUNCTION_NAME: Final = "code.function.name"
"""Exported log attribute: the function that logged (``LogRecord.funcName``)."""
CODE_LINE_NUMBER: Final = "code.line.number"
"""Exported log attribute: the line that logged (``LogRecord.lineno``)."""
EXCEPTION_TYPE: Final = "exception.type"
"""Exported log and ``exception`` span-event attribute: the fully qualified class name of
the exception."""
EXCEPTION_MESSAGE: Final = "exception.message"
"""Exported log and ``exception`` span-event attribute: ``str()`` of the exception (a
stand-in naming the failure when its ``__str__`` raises)."""
EXCEPTION_STACKTRACE: Final = "exception.stacktrace"
"""Exported log and ``exception`` span-event attribute: the formatted traceback."""
EXCEPTION_ESCAPED: Final = "exception.escaped"
"""``exception`` span-event attribute: ``"False"`` (as the SDK's ``record_exception`` sets it)."""

# -- metric attributes: GenAI inference (OpenTelemetry GenAI semantic conventions) ----

GEN_AI_OPERATION_NAME: Final = "gen_ai.operation.name"
"""Metric attribute: the operation (``chat``, ``text_completion``, ``generate_content``, ...)."""
GEN_AI_PROVIDER_NAME: Final = "gen_ai.provider.name"
"""Metric attribute: who serves the model (``openai``, ``vllm``, ``megatron``, ...)."""
GEN_AI_REQUEST_MODEL: Final = "gen_ai.request.model"
"""Metric attribute: the model the request asked for."""
GEN_AI_RESPONSE_MODEL: Final = "gen_ai.response.model"
"""Metric attribute: the model that actually answered, when it differs or is more precise."""
GEN_AI_TOKEN_TYPE: Final = "gen_ai.token.type"
"""Metric attribute of :data:`GEN_AI_CLIENT_TOKEN_USAGE`: ``input`` or ``output``."""
GEN_AI_TOKEN_TYPE_INPUT: Final = "input"
"""Value of :data:`GEN_AI_TOKEN_TYPE` for prompt (input) tokens."""
GEN_AI_TOKEN_TYPE_OUTPUT: Final = "output"
"""Value of :data:`GEN_AI_TOKEN_TYPE` for generated (output) tokens."""
ERROR_TYPE: Final = "error.type"
"""Metric attribute: a low-cardinality class of the error an operation ended with."""

# -- metric attributes: Gym rollouts ----------------------------------------------------

GYM_ENVIRONMENT: Final = "nemo.gym.environment"
"""Metric attribute: the environment (resource server) a rollout ran in."""
GYM_AGENT: Final = "nemo.gym.agent"
"""Metric attribute: the agent that produced a rollout."""
GYM_VERIFY_PASSED: Final = "nemo.gym.verify.passed"
"""Metric attribute: ``True`` when the rollout passed verification, ``False`` when it failed."""
