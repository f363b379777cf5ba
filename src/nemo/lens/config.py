"""Telemetry configuration: :class:`NemoLensConfig` and its environment reader.

Checked when built, and again with the export-strategy name by set-up before anything global
changes; every error names the field (or variable), what was wrong and what is accepted.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
import string
from collections.abc import Callable, Mapping
from dataclasses import InitVar, dataclass
from typing import Any, Final, TypeAlias

from nemo.lens._compat import old_name
from nemo.lens._core import strategy_registry
from nemo.lens._core.destinations import (
    CONSOLE_FORMATS,
    exporter_names,
    file_name_part,
    profiler_names,
)
from nemo.lens._core.ids import new_run_id
from nemo.lens.groups import SpanGroup
from nemo.lens.registry import resolve_job_spec
from nemo.lens.spec import spec_in_effect

__all__ = [
    "DEFAULT_ENV_PREFIX",
    "DEFAULT_TRACE_FILE",
    "TRACE_FILE_PLACEHOLDERS",
    "NemoLensConfig",
    "SpanGroupClasses",
    "default_run_id",
    "goodput_windows",
]

SpanGroupClasses: TypeAlias = type[SpanGroup] | tuple[type[SpanGroup], ...]
"""One span-group class, or several when one process hosts several consumers."""

DEFAULT_ENV_PREFIX: Final = "NEMO_LENS"
"""The prefix :meth:`NemoLensConfig.from_env` reads by default (``NEMO_LENS_ENABLED``, ...)."""

DEFAULT_TRACE_FILE: Final = "traces/{service_name}-{run_id}-rank{rank}.jsonl"
"""Where the ``file`` exporter writes when ``trace_file`` is empty (relative to the working dir)."""

TRACE_FILE_PLACEHOLDERS: Final = frozenset({"rank", "run_id", "service_name"})
"""The ``{...}`` placeholders a ``trace_file`` template may use."""

# Fields read from variables of fixed names (the tools users run already set them), not
# from {prefix}_{FIELD}.
_FIXED_ENV: Final[Mapping[str, str]] = {
    "service_name": "OTEL_SERVICE_NAME",
    "wandb_entity": "WANDB_ENTITY",
    "wandb_project": "WANDB_PROJECT",
}


class _FieldError(Exception):
    """An error about one config field (from_env adds the variable that set it)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


class _FieldValueError(_FieldError, ValueError):
    pass


class _FieldTypeError(_FieldError, TypeError):
    pass


def default_run_id(environ: Mapping[str, str] | None = None) -> str:
    """The run id used when ``NemoLensConfig.run_id`` is empty: ``SLURM_JOB_ID``, else
    torchrun's ``TORCHELASTIC_RUN_ID`` (not its placeholder ``none``), so every rank of a job
    agrees; else a fresh 12-hex-digit id, per process."""
    env = os.environ if environ is None else environ
    slurm = env.get("SLURM_JOB_ID", "").strip()
    if slurm:
        return slurm
    elastic = env.get("TORCHELASTIC_RUN_ID", "").strip()
    if elastic and elastic.lower() != "none":
        return elastic
    return new_run_id()


def _describe(value: object) -> str:
    return f"{type(value).__name__} {value!r}"


def _check_trace_file_template(template: str) -> None:
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as exc:
        raise _FieldValueError(
            "trace_file",
            f"trace_file {template!r} is not a valid template ({exc}); write literal braces "
            "as '{{' and '}}'",
        ) from None
    allowed = ", ".join("{" + name + "}" for name in sorted(TRACE_FILE_PLACEHOLDERS))
    for _, field_name, _, _ in parsed:
        if field_name is not None and field_name not in TRACE_FILE_PLACEHOLDERS:
            shown = "{" + field_name + "}"
            raise _FieldValueError(
                "trace_file",
                f"trace_file {template!r} uses the unknown placeholder {shown}; "
                f"the placeholders are {allowed}",
            )


def _is_span_group_class(value: object) -> bool:
    return isinstance(value, type) and isinstance(getattr(value, "ALL_GROUPS", None), frozenset)


@dataclass
class NemoLensConfig:
    """Everything :func:`nemo.lens.setup_telemetry` needs to know about a run, built in code
    or with :meth:`from_env`; checked on construction, so a typo fails where it was written."""

    enabled: bool = False
    """Master switch. When ``False`` set-up installs nothing and every group is off."""
    service_name: str = "nemo"
    """``service.name`` of the resource (``OTEL_SERVICE_NAME`` in :meth:`from_env`)."""
    export_strategy: str = "single_rank"
    """Name of the registered export strategy (see :mod:`nemo.lens.strategies`)."""
    export_rank: int = -1
    """The exporting rank for ``single_rank``; ``-1`` means the last rank."""
    export_sample_rate: float = 1.0
    """Fraction of ranks that export under ``sampled``, in [0, 1]."""
    sampler_enabled: bool = False
    """Use :class:`nemo.lens.sampling.RankAwareSampler`: exporting ranks sample every span;
    with :attr:`spans_on_every_rank`, non-exporting ranks then record none (cheaper)."""
    traces_enabled: bool = True
    """Install a tracer provider. When ``False`` every span group is off."""
    metrics_enabled: bool = True
    """Install a meter provider."""
    logs_enabled: bool = False
    """Install a logger provider (OpenTelemetry logs)."""
    span_groups: str = "default"
    """Span-group spec resolved against ``span_group_cls`` (``"per_step"``, ``"all,-layer"``);
    an empty one means ``default``, as an empty ``NEMO_LENS_SPAN_GROUPS`` does (v0.2.0's
    field enabled no group; ``"-all"`` does that)."""
    exporter: str = "otlp"
    """``otlp``, ``console``, ``file`` or ``none``, or several separated by commas
    (``otlp,file``): each gets everything."""
    run_id: str = ""
    """Identifies the run; empty means :func:`default_run_id` at set-up."""
    user: str = ""
    """Who launched the run (``{prefix}_USER_ID`` in :meth:`from_env`)."""
    wandb_entity: str = ""
    """Weights & Biases entity, recorded on the resource (``WANDB_ENTITY``)."""
    wandb_project: str = ""
    """Weights & Biases project, recorded on the resource (``WANDB_PROJECT``)."""
    span_group_cls: SpanGroupClasses = SpanGroup
    """The span-group class ``span_groups`` is resolved against (``MegatronSpanGroup``), or a
    tuple of them for a process hosting several consumers (the first decides categories)."""
    trace_file: str = ""
    """Output path of the ``file`` exporter; empty means :data:`DEFAULT_TRACE_FILE`.
    May use ``{rank}``, ``{run_id}`` and ``{service_name}``."""
    handle_signals: bool = False
    """On SIGTERM, flush telemetry and end open spans as truncated before the process goes;
    a handler already installed is chained. Needs set-up from the main thread."""
    console_format: str = "otel"
    """How the ``console`` exporter prints spans: ``otel`` (the SDK's ``to_json(indent=None)``
    per line, as v0.2.0) or ``lens`` (the ``file`` exporter's line)."""
    spans_on_every_rank: bool = False
    """Make real spans (exported nowhere) on the ranks the export strategy leaves out too, so
    every rank has a valid trace context; off, as in v0.2.0, such ranks enable no group."""
    goodput_metrics: str = ""
    """Export goodput as metrics while the job runs (docs/goodput.md): ``"1"`` (or true, yes,
    on) for rolling windows of 60, 300 and 900 s, or the windows in seconds (``"60,600"``);
    empty or ``"0"`` (false, no, off): off. Needs metrics and traces enabled."""
    profiler: str = ""
    """Profilers each recorded span is mirrored to, separated by commas: ``nvtx`` (an NVTX
    range in the ``nemo.lens`` domain; the ``nvtx`` extra) and ``torch`` (a
    ``torch.profiler.record_function`` range). Empty (the default): none."""
    _span_group_cls: InitVar[SpanGroupClasses | None] = None
    """v0.2.0's keyword for :attr:`span_group_cls`; it sets that field, and reading it reads it."""

    def __post_init__(self, _span_group_cls: SpanGroupClasses | None) -> None:
        if _span_group_cls is not None and not isinstance(_span_group_cls, property):
            self.span_group_cls = _span_group_cls
        self._check_fields()

    def _check_fields(self) -> frozenset[str]:
        """Check everything that does not depend on process-wide registries; return the
        span groups the spec enables (resolving it is the check)."""
        for name in _BOOL_FIELDS:
            value = getattr(self, name)
            if not isinstance(value, bool):
                raise _FieldTypeError(
                    name,
                    f"NemoLensConfig.{name} must be a bool (True or False), got "
                    f"{_describe(value)}; to parse strings such as 'yes' or '1' use "
                    "NemoLensConfig.from_env()",
                )
        for name in _STR_FIELDS:
            value = getattr(self, name)
            if not isinstance(value, str):
                raise _FieldTypeError(
                    name, f"NemoLensConfig.{name} must be a str, got {_describe(value)}"
                )
        if isinstance(self.export_rank, bool) or not isinstance(self.export_rank, int):
            raise _FieldTypeError(
                "export_rank",
                "NemoLensConfig.export_rank must be an int (a rank, or -1 for the last "
                f"rank), got {_describe(self.export_rank)}",
            )
        if self.export_rank < -1:
            raise _FieldValueError(
                "export_rank",
                f"NemoLensConfig.export_rank must be a rank >= 0 or -1 for the last rank, "
                f"got {self.export_rank}",
            )
        rate = self.export_sample_rate
        if isinstance(rate, bool) or not isinstance(rate, (int, float)):
            raise _FieldTypeError(
                "export_sample_rate",
                "NemoLensConfig.export_sample_rate must be a number between 0 and 1, got "
                f"{_describe(rate)}",
            )
        if not (math.isfinite(rate) and 0.0 <= rate <= 1.0):
            raise _FieldValueError(
                "export_sample_rate",
                f"NemoLensConfig.export_sample_rate must be between 0 and 1 (a fraction of "
                f"ranks, e.g. 0.25), got {rate!r}",
            )
        try:
            exporter_names(self.exporter)
        except ValueError as exc:
            raise _FieldValueError("exporter", str(exc)) from None
        if self.console_format.strip().lower() not in CONSOLE_FORMATS:
            raise _FieldValueError(
                "console_format",
                f"unknown console_format {self.console_format!r}; use one of: "
                f"{', '.join(CONSOLE_FORMATS)} (otel: the OpenTelemetry SDK's to_json per "
                "line; lens: the file exporter's line)",
            )
        try:
            profiler_names(self.profiler)
        except ValueError as exc:
            raise _FieldValueError("profiler", str(exc)) from None
        cls = self.span_group_cls
        chosen = cls if isinstance(cls, (tuple, list)) else (cls,)
        if not chosen or not all(_is_span_group_class(each) for each in chosen):
            raise _FieldTypeError(
                "span_group_cls",
                "NemoLensConfig.span_group_cls must be a span-group class such as SpanGroup "
                "or MegatronSpanGroup, or a non-empty tuple of them such as "
                f"(RLSpanGroup, MegatronSpanGroup), got {_describe(cls)}",
            )
        try:
            groups = resolve_job_spec(spec_in_effect(self.span_groups), chosen)
        except (ValueError, TypeError) as exc:
            raise _FieldValueError(
                "span_groups", f"invalid span_groups {self.span_groups!r}: {exc}"
            ) from None
        _check_trace_file_template(self.trace_file)
        goodput_windows(self.goodput_metrics)
        return groups

    def validate(self) -> None:
        """Check every field, including that ``export_strategy`` is registered (set-up does
        too): :class:`TypeError` for a wrong type, :class:`ValueError` for a bad value."""
        self._check_fields()
        try:
            strategy_registry.lookup(self.export_strategy)
        except ValueError as exc:
            raise _FieldValueError(
                "export_strategy", f"NemoLensConfig.export_strategy: {exc}"
            ) from None

    @property
    def resolved_span_groups(self) -> frozenset[str]:
        """The groups ``span_groups`` enables, resolved against ``span_group_cls`` at each
        access (:class:`ValueError` for an unknown name); an empty spec means ``default``."""
        return resolve_job_spec(spec_in_effect(self.span_groups), self.span_group_cls)

    @property
    def profilers(self) -> tuple[str, ...]:
        """The profilers ``profiler`` names, trimmed and lower-cased, in order
        (``"nvtx,torch"`` -> ``("nvtx", "torch")``; ``""`` -> ``()``)."""
        return profiler_names(self.profiler)

    @property
    def exporters(self) -> tuple[str, ...]:
        """The exporters ``exporter`` names, trimmed and lower-cased, in order
        (``"otlp,file"`` -> ``("otlp", "file")``; ``"none"`` -> ``("none",)``)."""
        return exporter_names(self.exporter)

    def resolved(self) -> NemoLensConfig:
        """Return a copy with ``run_id`` filled in (see :func:`default_run_id`)."""
        if self.run_id.strip():
            return self
        return dataclasses.replace(self, run_id=default_run_id())

    def format_trace_file(self, rank: int) -> str:
        """Return the ``file`` exporter's path for *rank*; call on a :meth:`resolved` config.

        ``{run_id}`` and ``{service_name}`` are filled in as safe file-name parts (see
        :func:`~nemo.lens._core.destinations.file_name_part`): no separator, no ``..``, no
        control character, at most 100 bytes. The resource keeps the values as given.
        """
        template = self.trace_file or DEFAULT_TRACE_FILE
        try:
            path = template.format(
                rank=rank,
                run_id=file_name_part(self.run_id),
                service_name=file_name_part(self.service_name),
            )
        except (ValueError, KeyError, IndexError) as exc:
            raise _FieldValueError(
                "trace_file",
                f"trace_file {template!r} cannot be filled in ({exc}); the placeholders are "
                "{rank} (an int), {run_id} and {service_name} (strs)",
            ) from None
        if not path.strip():
            raise _FieldValueError("trace_file", f"trace_file {template!r} gives an empty path")
        return path

    @classmethod
    def from_env(
        cls,
        prefix: str = DEFAULT_ENV_PREFIX,
        fallback_prefix: str | None = None,
        span_group_cls: SpanGroupClasses | None = None,
    ) -> NemoLensConfig:
        """Build a config from environment variables.

        Each field ``x`` is read from ``{prefix}_X`` (``user`` from ``{prefix}_USER_ID``),
        else ``{fallback_prefix}_X``, else its default; ``service_name`` from
        ``OTEL_SERVICE_NAME``, the W&B fields from ``WANDB_ENTITY`` / ``WANDB_PROJECT``.
        Booleans accept 1/0, true/false, yes/no, on/off in any case. A bad value raises
        :class:`ValueError` naming the variable. The spec is resolved against
        *span_group_cls* (default :class:`SpanGroup`; a tuple for several consumers).
        """
        values: dict[str, Any] = {}
        sources: dict[str, str] = {}
        for field_name, suffix in _ENV_SUFFIXES.items():
            if field_name in _FIXED_ENV:
                variables: tuple[str, ...] = (_FIXED_ENV[field_name],)
            else:
                variables = (f"{prefix}_{suffix}",)
                if fallback_prefix:
                    variables += (f"{fallback_prefix}_{suffix}",)
            for variable in variables:
                raw = os.environ.get(variable, "").strip()
                if raw:
                    parse = _PARSERS.get(field_name)
                    values[field_name] = raw if parse is None else parse(variable, raw)
                    sources[field_name] = variable
                    break
        if span_group_cls is not None:
            values["span_group_cls"] = span_group_cls
        try:
            return cls(**values)
        except _FieldError as exc:
            source = sources.get(exc.field)
            if source is None:
                raise
            raise ValueError(f"{source}={os.environ.get(source, '')!r}: {exc}") from None


NemoLensConfig._span_group_cls = old_name("span_group_cls")  # type: ignore[attr-defined]

_FIELD_TYPES: Final = {field.name: field.type for field in dataclasses.fields(NemoLensConfig)}
_BOOL_FIELDS: Final = tuple(name for name, kind in _FIELD_TYPES.items() if kind == "bool")
_STR_FIELDS: Final = tuple(name for name, kind in _FIELD_TYPES.items() if kind == "str")
# Field -> the suffix of the variable that sets it under a prefix.
_ENV_SUFFIXES: Final = {
    name: "USER_ID" if name == "user" else name.upper()
    for name in _FIELD_TYPES
    if name != "span_group_cls"
}

_BOOL_TEXT: Final = {"1": True, "true": True, "yes": True, "on": True}
_BOOL_TEXT.update(dict.fromkeys(("0", "false", "no", "off"), False))


def goodput_windows(text: str) -> tuple[int, ...]:
    """The rolling windows, in seconds, that ``goodput_metrics`` asks for; ``()`` when off.
    A bad value raises the field's :class:`ValueError` naming the fix."""
    raw = text.strip().lower()
    if raw in ("", "0", "false", "no", "off"):
        return ()
    if raw in ("1", "true", "yes", "on"):
        return (60, 300, 900)
    windows: list[int] = []
    for part in raw.split(","):
        part = part.strip()
        if not part.isdigit() or int(part) <= 0:
            raise _FieldValueError(
                "goodput_metrics",
                f"goodput_metrics {text!r}: {part!r} is not a window in whole seconds; write "
                "1 for windows of 60, 300 and 900 s, or the windows such as 60,300,900 "
                "(0 turns it off)",
            )
        if int(part) not in windows:
            windows.append(int(part))
    return tuple(sorted(windows))


def _parse_bool(variable: str, raw: str) -> bool:
    value = _BOOL_TEXT.get(raw.lower())
    if value is None:
        raise ValueError(
            f"{variable}={raw!r} is not a boolean; accepted values: 1/0, true/false, "
            "yes/no, on/off (any case)"
        )
    return value


def _parse_int(variable: str, raw: str) -> int:
    if not re.fullmatch(r"[+-]?\d+", raw):
        raise ValueError(
            f"{variable}={raw!r} is not an integer; write a whole number such as 0 or -1"
        )
    return int(raw)


def _parse_fraction(variable: str, raw: str) -> float:
    try:
        return float(raw)
    except ValueError:
        raise ValueError(
            f"{variable}={raw!r} is not a number; write a number between 0 and 1 such as 0.25"
        ) from None


# Each takes the variable's name and its stripped, non-empty text (the config checks ranges).
_PARSERS: Final[Mapping[str, Callable[[str, str], Any]]] = {
    **dict.fromkeys(_BOOL_FIELDS, _parse_bool),
    "export_rank": _parse_int,
    "export_sample_rate": _parse_fraction,
}
