"""The exporter of each signal for an exporter name; an OTLP exporter's module is imported
only for the transport in use (a job exporting over HTTP never loads gRPC)."""

from __future__ import annotations

import importlib
from typing import Any, Final

from nemo.lens._core.destinations import (
    EXPORTER_NAMES,
    Signal,
    otlp_protocol,
    sibling_path,
    unknown_exporter,
)
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

__all__ = ["create_exporter", "is_otlp_span_exporter"]

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


def create_exporter(
    signal: Signal, name: str, *, path: str | None = None, console_format: str = "otel"
) -> Any:
    """The exporter of *signal* called *name* (``None`` for ``none``). For ``file``, *path*
    is the span file (the other signals' are its siblings); for ``console``, spans are the
    SDK's ``to_json`` lines (*console_format* ``otel``) or the file's line (``lens``).
    Raises ``ValueError`` for an unknown name or OTLP protocol, ``ImportError`` naming the
    package to install when the OTLP exporter's is missing.
    """
    key = name.strip().lower()
    if key not in EXPORTER_NAMES:
        raise ValueError(unknown_exporter(name))
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
        return getattr(module, _OTLP_CLASSES[signal][1])()
    if key == "none":
        return None
    if key == "console":
        sink: LineSink = StdoutSink()
    elif path:
        sink = FileSink(sibling_path(path, signal))
    else:
        raise ValueError("the file exporter needs a path (NemoLensConfig.trace_file)")
    if signal == "metrics":
        return JsonLinesMetricExporter(sink)
    if signal == "logs":
        return JsonLinesLogExporter(sink)
    if key == "file":
        return TraceFileSpanExporter(sink)
    if console_format.strip().lower() == "otel":
        return SdkJsonSpanExporter(sink)
    return JsonLinesSpanExporter(sink)


def is_otlp_span_exporter(exporter: object) -> bool:
    """Whether *exporter* is one of OpenTelemetry's OTLP span exporters, exactly (a subclass
    may read more of a span than their encoder does)."""
    kind = type(exporter)
    return kind.__qualname__ == _OTLP_CLASSES["traces"][1] and kind.__module__ in {
        _otlp_module(protocol, "traces") for protocol in ("grpc", "http/protobuf")
    }
