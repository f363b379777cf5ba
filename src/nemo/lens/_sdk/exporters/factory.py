"""Build the exporter for each signal from an exporter name.

The OTLP exporter modules are imported only for the transport in use, so a
job that exports over HTTP never loads gRPC.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any, TypeVar

from opentelemetry.sdk._logs.export import LogRecordExporter
from opentelemetry.sdk.metrics.export import MetricExporter
from opentelemetry.sdk.trace.export import SpanExporter

from nemo.lens._core.destinations import EXPORTER_NAMES, Signal, otlp_protocol, sibling_path
from nemo.lens._sdk.exporters.jsonl import (
    FileSink,
    JsonLinesLogExporter,
    JsonLinesMetricExporter,
    JsonLinesSpanExporter,
    LineSink,
    SdkJsonSpanExporter,
    StdoutSink,
)
from nemo.lens._sdk.exporters.trace_file import TraceFileSpanExporter

__all__ = [
    "create_log_exporter",
    "create_metric_exporter",
    "create_span_exporter",
    "is_otlp_span_exporter",
    "otlp_exporter_class",
]

# (protocol, signal) -> (module, class). Module paths are those of
# opentelemetry-exporter-otlp-proto-{grpc,http}; the log exporters live in
# modules with a leading underscore because OpenTelemetry logs are not stable.
_OTLP_CLASSES: dict[tuple[str, Signal], tuple[str, str]] = {
    ("grpc", "traces"): (
        "opentelemetry.exporter.otlp.proto.grpc.trace_exporter",
        "OTLPSpanExporter",
    ),
    ("grpc", "metrics"): (
        "opentelemetry.exporter.otlp.proto.grpc.metric_exporter",
        "OTLPMetricExporter",
    ),
    ("grpc", "logs"): ("opentelemetry.exporter.otlp.proto.grpc._log_exporter", "OTLPLogExporter"),
    ("http/protobuf", "traces"): (
        "opentelemetry.exporter.otlp.proto.http.trace_exporter",
        "OTLPSpanExporter",
    ),
    ("http/protobuf", "metrics"): (
        "opentelemetry.exporter.otlp.proto.http.metric_exporter",
        "OTLPMetricExporter",
    ),
    ("http/protobuf", "logs"): (
        "opentelemetry.exporter.otlp.proto.http._log_exporter",
        "OTLPLogExporter",
    ),
}


def otlp_exporter_class(signal: Signal) -> type[Any]:
    """Return the OTLP exporter class for *signal* under the configured protocol.

    Raises :class:`ValueError` for an unsupported protocol value and
    :class:`ImportError` (with the package to install) when the exporter
    package is missing.
    """
    protocol = otlp_protocol(signal)
    module_name, class_name = _OTLP_CLASSES[(protocol, signal)]
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        package = "opentelemetry-exporter-otlp-proto-" + ("grpc" if protocol == "grpc" else "http")
        raise ImportError(
            f"the otlp exporter over {protocol} needs {package}; install it with "
            f"pip install 'nemo-lens[sdk]' (or choose another exporter)"
        ) from exc
    found: type[Any] = getattr(module, class_name)
    return found


def _check_name(name: str) -> str:
    key = name.strip().lower()
    if key not in EXPORTER_NAMES:
        raise ValueError(f"unknown exporter {name!r}; use one of: {', '.join(EXPORTER_NAMES)}")
    return key


_X = TypeVar("_X")


def _create(
    signal: Signal, name: str, path: str | None, json_lines: Callable[[LineSink], _X]
) -> _X | None:
    """The exporter of *signal* called *name*; for ``file``, *path* is the span file
    (:func:`~nemo.lens._core.destinations.sibling_path` names the other signals')."""
    key = _check_name(name)
    if key == "otlp":
        exporter: _X = otlp_exporter_class(signal)()
        return exporter
    if key == "console":
        return json_lines(StdoutSink())
    if key == "file":
        if not path:
            raise ValueError("the file exporter needs a path (NemoLensConfig.trace_file)")
        return json_lines(FileSink(sibling_path(path, signal)))
    return None


def create_span_exporter(
    name: str, *, path: str | None = None, console_format: str = "otel"
) -> SpanExporter | None:
    """Return the span exporter called *name*, or ``None`` for ``none``.

    *path* is the JSON-lines file for ``file`` (trace format 2:
    :mod:`~nemo.lens._sdk.exporters.trace_file`). *console_format* is how ``console``
    prints a span (``NemoLensConfig.console_format``): ``otel``, the SDK's
    ``to_json(indent=None)``, or ``lens``, the ``file`` exporter's span line with
    its resource on it (every console line stands alone).
    """
    key = _check_name(name)
    if key == "console" and console_format.strip().lower() == "otel":
        return _create("traces", name, path, SdkJsonSpanExporter)
    if key == "file":
        return _create("traces", name, path, TraceFileSpanExporter)
    return _create("traces", name, path, JsonLinesSpanExporter)


def create_metric_exporter(name: str, *, path: str | None = None) -> MetricExporter | None:
    """Return the metric exporter called *name*, or ``None`` for ``none``.

    For ``file``, *path* is the span file; metrics go to its ``.metrics.jsonl`` sibling.
    """
    return _create("metrics", name, path, JsonLinesMetricExporter)


def create_log_exporter(name: str, *, path: str | None = None) -> LogRecordExporter | None:
    """Return the log exporter called *name*, or ``None`` for ``none``.

    For ``file``, *path* is the span file; logs go to its ``.logs.jsonl`` sibling.
    """
    return _create("logs", name, path, JsonLinesLogExporter)


def is_otlp_span_exporter(exporter: object) -> bool:
    """Whether *exporter* is one of OpenTelemetry's OTLP span exporters (gRPC or HTTP),
    exactly: a subclass may read more of a span than their encoder does."""
    kind = type(exporter)
    return any(
        signal == "traces" and kind.__module__ == module and kind.__qualname__ == name
        for (_, signal), (module, name) in _OTLP_CLASSES.items()
    )
