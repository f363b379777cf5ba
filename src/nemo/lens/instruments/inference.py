"""GenAI inference metrics with 0.1.0's signature (``nemo.lens.instruments.inference``).

:func:`record_inference_metrics` here takes 0.1.0's parameters with 0.1.0's
defaults and records what 0.1.0 recorded: ``gen_ai.server.request.duration``
and ``gen_ai.client.token.usage`` (by ``gen_ai.token.type``), with
``gen_ai.operation.name``, ``gen_ai.provider.name`` and ``gen_ai.request.model``.
For the other GenAI metrics (time to first token, client duration, errors) call
:func:`nemo.lens.instruments.record_inference_metrics` with keywords.
"""

from __future__ import annotations

from opentelemetry import metrics

from nemo.lens.instruments import _recorders

__all__ = ["record_inference_metrics"]


def record_inference_metrics(
    meter: metrics.Meter | None,
    request_duration_s: float | None = None,
    model: str | None = None,
    input_tokens: int | None = None,
    output_tokens: int | None = None,
    provider_name: str = "nemo",
    operation_name: str = "text_completion",
) -> None:
    """Record one inference request (0.1.0's helper); ``None`` values are skipped.

    Instruments are created once per meter; ``meter=None`` is nemo.lens's
    meter. Never raises: a value that cannot be recorded is skipped and logged
    once on the ``nemo.lens.instruments`` logger.
    """
    _recorders.record_inference_metrics(
        meter,
        request_duration_s,
        model,
        input_tokens,
        output_tokens,
        operation=operation_name,
        provider=provider_name,
    )
