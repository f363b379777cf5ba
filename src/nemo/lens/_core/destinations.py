"""Where telemetry goes: the exporters ``NemoLensConfig.exporter`` names, and their files.

``otlp``
    OTLP over gRPC, or HTTP/protobuf when ``OTEL_EXPORTER_OTLP_{SIGNAL}_PROTOCOL``
    (else ``OTEL_EXPORTER_OTLP_PROTOCOL``) is ``http/protobuf``. Endpoint,
    headers and timeout come from the standard ``OTEL_EXPORTER_OTLP_*`` variables.
``console``
    One compact JSON object per line on standard output: one line per span, one
    per metrics export, one per log record, each the OpenTelemetry SDK's own
    ``to_json(indent=None)`` (upstream v0.2.0's layout; ``console_format="otel"``).
    ``console_format="lens"`` prints spans in the ``file`` exporter's line
    instead (see :mod:`nemo.lens._sdk.exporters.encoding` for its fields).
``file``
    The same JSON lines appended to ``NemoLensConfig.trace_file``; metrics and
    logs go to sibling files (``.metrics.jsonl`` / ``.logs.jsonl``). No collector
    needed: the default for local runs.
``none``
    Nothing is exported (spans are still created and propagated).

Several exporters at once are a comma-separated list (``otlp,file``): each gets
every span, metric export and log record, through a processor of its own (see
:func:`exporter_names` for what a list may hold).

This module is the API side of exporter choice, so that :mod:`nemo.lens.config`
can validate names without the OpenTelemetry SDK; the exporters themselves
(:mod:`nemo.lens._sdk.exporters`) import the SDK and are only loaded on the
enabled set-up path.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Final, Literal

__all__ = [
    "CONSOLE_FORMATS",
    "EXPORTER_NAMES",
    "OTLP_PROTOCOLS",
    "Signal",
    "exporter_names",
    "otlp_protocol",
    "sibling_path",
]

EXPORTER_NAMES: Final = ("otlp", "console", "file", "none")
"""The exporter names ``NemoLensConfig.exporter`` accepts."""

CONSOLE_FORMATS: Final = ("otel", "lens")
"""The span layouts ``NemoLensConfig.console_format`` accepts: ``otel``, the SDK's
``ReadableSpan.to_json(indent=None)`` (the default), and ``lens``, the ``file``
exporter's line."""

OTLP_PROTOCOLS: Final = ("grpc", "http/protobuf")
"""The OTLP transports the Python exporters implement (``http/json`` is not one)."""

Signal = Literal["traces", "metrics", "logs"]

_CHOICES: Final = (
    f"use one of: {', '.join(EXPORTER_NAMES)}; several at once separated by commas, e.g. otlp,file"
)


def exporter_names(value: str) -> tuple[str, ...]:
    """The exporters *value* names, in order: ``"otlp"`` -> ``("otlp",)``,
    ``" OTLP, file "`` -> ``("otlp", "file")``.

    Names are trimmed and lower-cased; empty entries are ignored (``"otlp,"``).
    Raises :class:`ValueError`, naming the problem and the fix, for an unknown
    name (with 0.1.0's phrase ``Unknown exporter type: 'x'``, which callers
    match on), a name given twice, ``none`` beside another exporter, or a value
    that names none at all.
    """
    entries = [entry.strip() for entry in value.split(",")]
    names = tuple(entry.lower() for entry in entries if entry)
    if len(names) == 1 and names[0] in EXPORTER_NAMES:
        return names
    if len(names) <= 1:
        # The message a single name has always had (callers match on it).
        raise ValueError(
            f"unknown exporter {value!r} (Unknown exporter type: {value!r}); {_CHOICES}"
        )
    for entry in entries:
        if entry and entry.lower() not in EXPORTER_NAMES:
            raise ValueError(
                f"unknown exporter {entry!r} in {value!r} (Unknown exporter type: {entry!r}); "
                f"{_CHOICES}"
            )
    for index, name in enumerate(names):
        if name in names[:index]:
            raise ValueError(f"exporter {value!r} names {name} twice; name each exporter once")
    if "none" in names:
        others = ",".join(name for name in names if name != "none")
        raise ValueError(
            f"exporter {value!r} combines none (export nothing) with other exporters; "
            f"use none alone, or {others} without it"
        )
    return names


def otlp_protocol(signal: Signal, environ: Mapping[str, str] | None = None) -> str:
    """Return the OTLP transport for *signal*: ``"grpc"`` (default) or ``"http/protobuf"``.

    ``OTEL_EXPORTER_OTLP_{SIGNAL}_PROTOCOL`` wins over ``OTEL_EXPORTER_OTLP_PROTOCOL``;
    blank values count as unset. Raises :class:`ValueError` naming the variable
    for any other value, so a typo fails at set-up instead of silently using gRPC.
    """
    env = os.environ if environ is None else environ
    for variable in (
        f"OTEL_EXPORTER_OTLP_{signal.upper()}_PROTOCOL",
        "OTEL_EXPORTER_OTLP_PROTOCOL",
    ):
        raw = env.get(variable, "").strip()
        if not raw:
            continue
        value = raw.lower()
        if value not in OTLP_PROTOCOLS:
            raise ValueError(
                f"{variable}={raw!r} is not supported by the Python OTLP exporters; "
                f"use one of: {', '.join(OTLP_PROTOCOLS)}"
            )
        return value
    return "grpc"


def sibling_path(trace_path: str, signal: Signal) -> str:
    """Return the file that *signal* goes to when spans go to *trace_path*.

    ``traces/job-rank0.jsonl`` -> ``traces/job-rank0.metrics.jsonl``; a path
    without the ``.jsonl`` suffix gets ``.metrics.jsonl`` appended.
    """
    if signal == "traces":
        return trace_path
    stem = trace_path[: -len(".jsonl")] if trace_path.endswith(".jsonl") else trace_path
    return f"{stem}.{signal}.jsonl"
