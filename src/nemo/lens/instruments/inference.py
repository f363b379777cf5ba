"""GenAI inference metrics with 0.1.0's signature and defaults; for the other GenAI metrics
(time to first token, client duration, errors) call
:func:`nemo.lens.instruments.record_inference_metrics` with keywords."""

from __future__ import annotations

from opentelemetry import metrics

from nemo.lens.instruments import _recording

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
    """Record one inference request as 0.1.0 did (``gen_ai.server.request.duration`` and
    ``gen_ai.client.token.usage``); ``None`` values are skipped, nothing raises."""
    _recording.record_inference_metrics(
        meter,
        request_duration_s,
        model,
        input_tokens,
        output_tokens,
        operation=operation_name,
        provider=provider_name,
    )
