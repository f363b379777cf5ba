"""``nemo-lens emit-spans``: a tree of finished spans over known intervals (a scheduler's
records, after a job), through the configured exporter (docs/cli.md). Everything is checked
first: invalid spans emit nothing and exit 1; a failed set-up or export exits 2."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from nemo.lens.cli._common import EXIT_BAD_INPUT, EXIT_OK, plural

__all__ = ["cmd_emit_spans", "emit_spans"]

EXIT_EXPORT_FAILED: Final = 2
"""Set-up failed, or the spans could not be exported."""

_PROG: Final = "nemo-lens emit-spans"
_FORM: Final = "NAME,START,END[,PARENT]"
_SHUTDOWN_TIMEOUT_MS: Final = 10_000


@dataclass(frozen=True)
class SpanLine:
    """One ``--span`` argument, checked: its times as given (decimal text)."""

    name: str
    start: str
    end: str
    parent: str | None


def _parse_one(text: str) -> SpanLine | list[str]:
    from nemo.lens.span_utilities import epoch_nanoseconds

    fields = [field.strip() for field in text.split(",")]
    if len(fields) not in (3, 4):
        return [
            f"--span {text!r}: expected {_FORM} (3 or 4 comma-separated fields), "
            f"got {plural(len(fields), 'field')}"
        ]
    line = SpanLine(fields[0], fields[1], fields[2], fields[3] if len(fields) == 4 else None)
    problems = [f"--span {text!r}: NAME is empty"] if not line.name else []
    if line.parent == "":
        problems.append(
            f"--span {text!r}: PARENT is empty; leave the field out (NAME,START,END) for a root"
        )
    for label, value in (("START", line.start), ("END", line.end)):
        try:
            epoch_nanoseconds(value)
        except ValueError as exc:
            problems.append(f"--span {text!r}: {label} {exc}")
    return problems or line


def parse_spans(texts: Sequence[str]) -> tuple[list[SpanLine], list[str]]:
    """Check every ``--span``: ``(spans, [])``, parents before children, when all are valid,
    else ``([], problems)``."""
    problems: list[str] = []
    lines: list[SpanLine] = []
    for parsed in map(_parse_one, texts):
        if isinstance(parsed, list):
            problems += parsed
        else:
            lines.append(parsed)
    if problems:
        return [], problems
    if not lines:
        return [], [f"name at least one span with --span {_FORM}"]
    parents: dict[str, str | None] = {}
    for line in lines:
        if line.name in parents:
            problems.append(
                f"span name {line.name!r} is given more than once; names identify parents, "
                "so each --span needs its own"
            )
        parents.setdefault(line.name, line.parent)
    problems += [
        f"span {line.name!r} names parent {line.parent!r}, which no --span defines"
        for line in lines
        if line.parent is not None and line.parent not in parents
    ]
    if problems:
        return [], problems
    ordered = [line for line in lines if line.parent is None]
    for line in ordered:  # grows as it goes: each span's children after it
        ordered += [child for child in lines if child.parent == line.name]
    placed = {line.name for line in ordered}
    reported: set[str] = set()
    for line in lines:
        if line.name in placed:
            continue
        chain = [line.name]  # every parent exists and none leads to a root: a cycle
        while (parent := parents[chain[-1]]) not in chain:
            chain.append(str(parent))
        cycle = [*chain[chain.index(str(parent)) :], str(parent)]
        if reported.isdisjoint(cycle):
            reported.update(cycle)
            problems.append(
                "the parents form a cycle: "
                + " -> ".join(repr(name) for name in cycle)
                + " (each span names the next as its parent); a tree needs a root"
            )
    return ([], problems) if problems else (ordered, [])


def _error(message: str) -> None:
    print(f"{_PROG}: error: {message}", file=sys.stderr)


def emit_spans(service: str | None, texts: Sequence[str]) -> int:
    """Run the command: check, set up, emit, shut down; return the exit status."""
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
        f"emitted {plural(len(lines), 'span')} ({plural(roots, 'root')}) for service "
        f"{service.strip()!r} through {where}"
    )
    return EXIT_OK


def cmd_emit_spans(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    return emit_spans(args.service, args.spans or [])
