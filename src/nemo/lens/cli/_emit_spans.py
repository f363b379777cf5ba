"""``nemo-lens emit-spans``: emit a tree of finished spans from the command line.

Used after a job has ended, from records that know when things happened (a
scheduler's accounting, a launcher's log)::

    nemo-lens emit-spans --service slurm-reckoner \\
        --span job,1767225600,1767232800 \\
        --span queue,1767225600,1767225900,job \\
        --span run,1767225900,1767232800,job

Each ``--span`` is ``NAME,START,END[,PARENT]``: times in Unix-epoch seconds
(decimal text, kept to the nanosecond), ``PARENT`` the name of another
``--span`` (listed before or after it). Spans without a parent are roots. They
go through the exporter the usual configuration names (``NEMO_LENS_EXPORTER``,
``NEMO_LENS_TRACE_FILE``, ``OTEL_EXPORTER_OTLP_*``...); telemetry is enabled for
the command whatever ``NEMO_LENS_ENABLED`` says, and only traces are set up.

Everything is checked before anything is emitted: a malformed field, a
duplicate name, a missing parent, a cycle or a time that is not finite emits
nothing and exits 1, naming each problem. Exit 2 when set-up fails (a bad
``NEMO_LENS_*`` value, an exporter that cannot start) or the export does not
complete.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Final

__all__ = ["EXIT_EXPORT_FAILED", "SpanLine", "emit_spans", "parse_spans"]

EXIT_EXPORT_FAILED: Final = 2
"""Set-up failed, or the spans could not be exported."""

_PROG: Final = "nemo-lens emit-spans"
_FORM: Final = "NAME,START,END[,PARENT]"
_SHUTDOWN_TIMEOUT_MS: Final = 10_000


@dataclass(frozen=True)
class SpanLine:
    """One ``--span`` argument, checked."""

    name: str
    start: str
    end: str
    parent: str | None
    start_seconds: Decimal
    end_seconds: Decimal


def _parse_one(text: str) -> SpanLine | list[str]:
    from nemo.lens.span_utilities import epoch_nanoseconds

    fields = [field.strip() for field in text.split(",")]
    if len(fields) not in (3, 4):
        return [
            f"--span {text!r}: expected {_FORM} (3 or 4 comma-separated fields), "
            f"got {len(fields)} field{'' if len(fields) == 1 else 's'}"
        ]
    problems: list[str] = []
    name, start, end = fields[:3]
    parent = fields[3] if len(fields) == 4 else None
    if not name:
        problems.append(f"--span {text!r}: NAME is empty")
    if parent is not None and not parent:
        problems.append(
            f"--span {text!r}: PARENT is empty; leave the field out (NAME,START,END) for a root"
        )
    seconds: dict[str, Decimal] = {}
    for label, value in (("START", start), ("END", end)):
        try:
            seconds[label], _ = epoch_nanoseconds(value)
        except ValueError as exc:
            problems.append(f"--span {text!r}: {label} {exc}")
    if problems:
        return problems
    return SpanLine(name, start, end, parent, seconds["START"], seconds["END"])


def _cycle_through(start: str, parents: dict[str, str | None]) -> list[str]:
    """The cycle reached by following parents from *start*, as names (first repeated)."""
    seen: list[str] = []
    name: str | None = start
    while name is not None and name not in seen:
        seen.append(name)
        name = parents.get(name)
    assert name is not None
    cycle = seen[seen.index(name) :]
    return [*cycle, name]


def parse_spans(texts: Sequence[str]) -> tuple[list[SpanLine], list[str]]:
    """Check every ``--span``; return them parents first, or the problems found.

    Returns ``(spans, [])`` when everything is valid, else ``([], problems)``.
    """
    problems: list[str] = []
    lines: list[SpanLine] = []
    for text in texts:
        parsed = _parse_one(text)
        if isinstance(parsed, list):
            problems += parsed
        else:
            lines.append(parsed)
    if problems:
        return [], problems
    if not lines:
        return [], [f"name at least one span with --span {_FORM}"]

    by_name: dict[str, SpanLine] = {}
    for line in lines:
        if line.name in by_name:
            problems.append(
                f"span name {line.name!r} is given more than once; names identify parents, "
                "so each --span needs its own"
            )
        by_name.setdefault(line.name, line)
    for line in lines:
        if line.parent is not None and line.parent not in by_name:
            problems.append(
                f"span {line.name!r} names parent {line.parent!r}, which no --span defines"
            )
    if problems:
        return [], problems

    # Parents before children, whatever order they were given in.
    children: dict[str | None, list[SpanLine]] = {}
    for line in lines:
        children.setdefault(line.parent, []).append(line)
    ordered: list[SpanLine] = []
    pending = list(children.get(None, []))
    while pending:
        line = pending.pop(0)
        ordered.append(line)
        pending += children.get(line.name, [])
    if len(ordered) < len(lines):
        placed = {line.name for line in ordered}
        parents = {line.name: line.parent for line in lines}
        reported: set[str] = set()
        for line in lines:
            if line.name in placed or line.name in reported:
                continue
            cycle = _cycle_through(line.name, parents)
            if cycle[0] in reported:
                continue
            reported.update(cycle)
            problems.append(
                "the parents form a cycle: "
                + " -> ".join(repr(name) for name in cycle)
                + " (each span names the next as its parent); a tree needs a root"
            )
        return [], problems
    return ordered, []


def _error(message: str) -> None:
    print(f"{_PROG}: error: {message}", file=sys.stderr)


def emit_spans(service: str | None, texts: Sequence[str]) -> int:
    """Run the command: check, set up, emit, shut down; return the exit status."""
    from nemo.lens.cli._common import EXIT_BAD_INPUT, EXIT_OK

    problems: list[str] = []
    if service is None or not service.strip():
        problems.append("name the service with --service NAME (its service.name)")
    lines, span_problems = parse_spans(texts)
    problems += span_problems
    if problems:
        for problem in problems:
            _error(problem)
        print(f"{_PROG}: nothing was emitted", file=sys.stderr)
        return EXIT_BAD_INPUT
    assert service is not None

    from opentelemetry import trace
    from opentelemetry.context import Context

    from nemo.lens.config import NemoLensConfig
    from nemo.lens.handle import setup_telemetry
    from nemo.lens.span_utilities import emit_span
    from nemo.lens.strategies import AllRanksStrategy

    try:
        config = dataclasses.replace(
            NemoLensConfig.from_env(),
            enabled=True,
            service_name=service.strip(),
            traces_enabled=True,
            metrics_enabled=False,
            logs_enabled=False,
            handle_signals=False,
        )
        handle = setup_telemetry(config, export_strategy=AllRanksStrategy(), _allow_reinit=True)
    except (ValueError, TypeError, ImportError, OSError, RuntimeError) as exc:
        _error(f"could not set up telemetry: {exc}")
        return EXIT_EXPORT_FAILED

    emitted: dict[str, trace.Span] = {}
    try:
        for line in lines:
            parent = emitted.get(line.parent) if line.parent is not None else None
            # A root starts a trace of its own: not even a context current here joins it.
            context = trace.set_span_in_context(parent) if parent is not None else Context()
            span = emit_span(handle.tracer, line.name, line.start, line.end, context=context)
            assert span is not None  # no group: never skipped
            emitted[line.name] = span
    finally:
        finished = handle.shutdown(_SHUTDOWN_TIMEOUT_MS)
    undelivered = handle.undelivered.get("traces", 0)
    if not finished or undelivered:
        reason = (
            f"{undelivered} of {len(lines)} spans could not be exported"
            if undelivered
            else f"the export did not finish within {_SHUTDOWN_TIMEOUT_MS // 1000} s"
        )
        _error(f"{reason} (exporter {config.exporter!r}); see the warnings above")
        return EXIT_EXPORT_FAILED
    roots = sum(1 for line in lines if line.parent is None)
    names = config.exporters
    where = f"the {','.join(names)} exporter{'s' if len(names) > 1 else ''}"
    if "file" in names:
        where += f" ({handle.config.format_trace_file(0)})"
    print(
        f"emitted {len(lines)} span{'' if len(lines) == 1 else 's'} "
        f"({roots} root{'' if roots == 1 else 's'}) for service {service.strip()!r} "
        f"through {where}"
    )
    return EXIT_OK
