"""The exporter of each signal for an exporter name; an OTLP exporter's module is imported
only for the transport in use (a job exporting over HTTP never loads gRPC)."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Final, TypeVar

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
]

# Signal -> (module, class) of opentelemetry-exporter-otlp-proto-{grpc,http}; the log
# exporters' modules are private because OpenTelemetry's logs are not stable.
_OTLP_CLASSES: Final[dict[Signal, tuple[str, str]]] = {
    "traces": ("trace_exporter", "OTLPSpanExporter"),
    "metrics": ("metric_exporter", "OTLPMetricExporter"),
    "logs": ("_log_exporter", "OTLPLogExporter"),
}


def _otlp_module(protocol: str, signal: Signal) -> str:
    transport = "grpc" if protocol == "grpc" else "http"
    return f"opentelemetry.exporter.otlp.proto.{transport}.{_OTLP_CLASSES[signal][0]}"


_X = TypeVar("_X")


def _create(
    signal: Signal, name: str, path: str | None, json_lines: Callable[[LineSink], _X]
) -> _X | None:
    # The exporter of *signal* called *name*; for ``file``, *path* is the span file (the
    # other signals' are its siblings). An unsupported OTLP protocol raises ValueError.
    key = name.strip().lower()
    if key not in EXPORTER_NAMES:
        raise ValueError(f"unknown exporter {name!r}; use one of: {', '.join(EXPORTER_NAMES)}")
    if key == "otlp":
        protocol = otlp_protocol(signal)
        try:
            module = importlib.import_module(_otlp_module(protocol, signal))
        except ImportError as exc:
            transport = "grpc" if protocol == "grpc" else "http"
            raise ImportError(
                f"the otlp exporter over {protocol} needs opentelemetry-exporter-otlp-proto-"
                f"{transport}; install it with pip install 'nemo-lens[sdk]' (or choose "
                "another exporter)"
            ) from exc
        exporter: _X = getattr(module, _OTLP_CLASSES[signal][1])()
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
    """The span exporter called *name* (``None`` for ``none``): for ``file``, trace format 2
    at *path*; for ``console``, the SDK's ``to_json`` lines (*console_format* ``otel``) or
    the file's line with its resource (``lens``)."""
    key = name.strip().lower()
    if key == "file":
        return _create("traces", name, path, TraceFileSpanExporter)
    if key == "console" and console_format.strip().lower() == "otel":
        return _create("traces", name, path, SdkJsonSpanExporter)
    return _create("traces", name, path, JsonLinesSpanExporter)


def create_metric_exporter(name: str, *, path: str | None = None) -> MetricExporter | None:
    """The metric exporter called *name* (``file``: *path*'s ``.metrics.jsonl`` sibling)."""
    return _create("metrics", name, path, JsonLinesMetricExporter)


def create_log_exporter(name: str, *, path: str | None = None) -> LogRecordExporter | None:
    """The log exporter called *name* (``file``: *path*'s ``.logs.jsonl`` sibling)."""
    return _create("logs", name, path, JsonLinesLogExporter)


def is_otlp_span_exporter(exporter: object) -> bool:
    """Whether *exporter* is one of OpenTelemetry's OTLP span exporters, exactly (a subclass
    may read more of a span than their encoder does)."""
    kind = type(exporter)
    return kind.__qualname__ == _OTLP_CLASSES["traces"][1] and kind.__module__ in {
        _otlp_module(protocol, "traces") for protocol in ("grpc", "http/protobuf")
    }
