"""What an in-memory metric reader holds, by metric name (one reading of the SDK's nesting)."""

from __future__ import annotations

from opentelemetry.sdk.metrics.export import InMemoryMetricReader, Metric


def metrics_by_name(reader: InMemoryMetricReader) -> dict[str, Metric]:
    """``{name: metric}`` of everything *reader* collects now (empty when nothing)."""
    data = reader.get_metrics_data()
    if data is None:
        return {}
    return {
        metric.name: metric
        for resource in data.resource_metrics
        for scope in resource.scope_metrics
        for metric in scope.metrics
    }
