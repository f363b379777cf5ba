"""Phase 1 of set-up: everything :func:`~nemo.lens._setup.setup_telemetry` refuses before it
changes anything, each a ``TypeError`` or ``ValueError`` naming the argument and the fix."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import cast

from opentelemetry.util.types import AttributeValue

from nemo.lens import _compat
from nemo.lens._core.destinations import Signal, file_problem, shown_path, sibling_path
from nemo.lens.config import DEFAULT_TRACE_FILE, NemoLensConfig
from nemo.lens.strategies import ExportStrategyFunction, ExportStrategyObject, get_export_strategy

__all__ = [
    "StrategyArgument",
    "check_components",
    "check_guard",
    "check_rank",
    "check_resource_attributes",
    "check_trace_files",
    "resolve_strategy",
]

_Strategy = (
    ExportStrategyFunction | ExportStrategyObject | Callable[[int, int, NemoLensConfig], bool]
)

# One flat union, so a lambda type-checks in either argument order (see strategies).
StrategyArgument = (
    ExportStrategyFunction | ExportStrategyObject | str | Callable[[int, int, NemoLensConfig], bool]
)
"""What ``setup_telemetry(export_strategy=...)`` accepts: a registered name, a callable
``strategy(config, rank, world_size)`` (0.1.0), an object with ``should_export``, or a
function whose first parameter is ``rank`` (see :func:`nemo.lens.strategies.export_decision`)."""


def check_rank(rank: object, world_size: object, owner: str = "setup_telemetry") -> tuple[int, int]:
    """*rank* and *world_size* as ints, with 0 <= rank < world_size; else an error naming
    *owner*, the call that was given them."""
    for name, value in (("rank", rank), ("world_size", world_size)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{owner}({name}=...) must be an int, got {value!r}")
    assert isinstance(rank, int) and isinstance(world_size, int)
    if world_size < 1:
        raise ValueError(f"{owner}: world_size must be at least 1, got {world_size}")
    if not 0 <= rank < world_size:
        raise ValueError(
            f"{owner}: rank {rank} is out of range for world_size {world_size} "
            f"(valid ranks: 0..{world_size - 1})"
        )
    return rank, world_size


def check_resource_attributes(
    attributes: Mapping[str, AttributeValue] | None,
) -> dict[str, AttributeValue]:
    if attributes is None:
        return {}
    if not isinstance(attributes, Mapping):
        raise TypeError(
            f"resource_attributes must be a mapping of str to attribute values, got "
            f"{type(attributes).__name__}"
        )
    checked: dict[str, AttributeValue] = {}
    scalar = (str, bool, int, float)
    for key, value in attributes.items():
        if not isinstance(key, str) or not key:
            raise TypeError(f"resource attribute keys must be non-empty str, got {key!r}")
        ok = isinstance(value, scalar) or (
            isinstance(value, Sequence)
            and not isinstance(value, str)
            and all(isinstance(item, scalar) for item in value)
        )
        if not ok:
            raise TypeError(
                f"resource attribute {key!r} has value {value!r} of type "
                f"{type(value).__name__}; use a str, bool, int, float or a sequence of them"
            )
        checked[key] = value
    return checked


def check_components(span_exporter: object, metric_reader: object, log_exporter: object) -> None:
    """Refuse what set-up would otherwise hand to the SDK to fail on, deep inside it."""
    for argument, value, methods, example in (
        ("span_exporter", span_exporter, ("export", "shutdown"), "InMemorySpanExporter()"),
        ("log_exporter", log_exporter, ("export", "shutdown"), "InMemoryLogRecordExporter()"),
    ):
        if value is not None and not all(callable(getattr(value, m, None)) for m in methods):
            raise TypeError(
                f"setup_telemetry({argument}=...) takes an OpenTelemetry exporter (an object "
                f"with export() and shutdown(), such as the SDK's {example}), got "
                f"{type(value).__name__} {value!r}"
            )
    if metric_reader is not None:
        try:
            from opentelemetry.sdk.metrics.export import MetricReader
        except ImportError:  # without the SDK nothing can be a reader
            MetricReader = None  # type: ignore[assignment,misc]
        if MetricReader is None or not isinstance(metric_reader, MetricReader):
            raise TypeError(
                "setup_telemetry(metric_reader=...) takes an OpenTelemetry MetricReader (such "
                "as the SDK's InMemoryMetricReader() or PeriodicExportingMetricReader(exporter)), "
                f"got {type(metric_reader).__name__} {metric_reader!r}"
            )


def check_trace_files(config: NemoLensConfig, trace_path: str, signals: Sequence[Signal]) -> None:
    """Refuse a ``file`` exporter path that set-up could not write (a directory, a place
    under a regular file or out of reach, a name too long), before anything is created."""
    for signal in signals:
        path = sibling_path(trace_path, signal)
        problem = file_problem(path)
        if problem is None:
            continue
        if config.trace_file:
            source = (
                f"NemoLensConfig.trace_file {shown_path(config.trace_file)} (NEMO_LENS_TRACE_FILE)"
            )
        else:
            source = f"the default trace_file {DEFAULT_TRACE_FILE!r} (NEMO_LENS_TRACE_FILE unset)"
        what = "trace file" if signal == "traces" else f"{signal} file"
        raise ValueError(
            f"the file exporter cannot write its {what} {shown_path(path)}, made from {source}: "
            f"{problem}; set NEMO_LENS_TRACE_FILE (NemoLensConfig.trace_file) to a file in a "
            "directory this process may write (it may use {service_name}, {run_id} and {rank})"
        )


def resolve_strategy(config: NemoLensConfig, export_strategy: StrategyArgument | None) -> _Strategy:
    if export_strategy is None:
        try:
            return cast(_Strategy, get_export_strategy(config.export_strategy))
        except ValueError as exc:  # as NemoLensConfig.validate() words it
            raise ValueError(f"NemoLensConfig.export_strategy: {exc}") from None
    if isinstance(export_strategy, str):
        return cast(_Strategy, get_export_strategy(export_strategy))
    if callable(getattr(export_strategy, "should_export", None)) or callable(export_strategy):
        return export_strategy
    raise TypeError(
        "export_strategy must be a registered strategy name, a function "
        "strategy(config, rank, world_size) -> bool, or an object with "
        f"should_export(rank, world_size, config), got {export_strategy!r}"
    )


def check_guard(allow_reinit: bool) -> None:
    active = _compat.initialised()
    if active and not allow_reinit:
        raise RuntimeError(
            "setup_telemetry() was already called in this process and its handle is still "
            "active (telemetry has already been initialised); call handle.shutdown() first, "
            "or pass _allow_reinit=True to shut the previous set-up down and replace it "
            "(notebooks, tests)"
        )
