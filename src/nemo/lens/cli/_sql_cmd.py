"""``nemo-lens sql`` runs one statement over the engine's views (a statement the engine rejects
is a usage error); ``check`` measures each span group's rate against the ``fires`` tier its
schema declares (exit 1 when one is flagged). Both print a table, CSV or JSON lines."""

from __future__ import annotations

import argparse
import csv
import json
import math
import sys
from collections.abc import Callable, Sequence
from datetime import date, datetime, time
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Final, TextIO

from nemo.lens.cli._classes import selected_classes
from nemo.lens.cli._common import (
    EXIT_BAD_INPUT,
    EXIT_OK,
    EXIT_USAGE,
    PROG,
    message,
    plural,
    print_lines,
    with_engine,
)
from nemo.lens.cli._engine import query
from nemo.lens.cli._table import Align, format_table

if TYPE_CHECKING:
    from nemo.lens.cli._engine import Engine

__all__ = [
    "UNSANDBOX",
    "Result",
    "cmd_check",
    "cmd_sql",
    "run_query",
    "write_result",
]

NULL_TEXT: Final = "NULL"
"""How a table shows a missing value (CSV leaves the cell empty, JSON writes null)."""

Result = tuple[list[str], list[tuple[Any, ...]]]
"""A statement's column names and its rows."""


class QueryError(Exception):
    """The engine rejected a statement: the message names the problem, :attr:`hint` the fix."""

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.hint = hint


UNSANDBOX: Final = "--allow-external-access"
"""The ``sql`` option that lets a statement reach beyond the traces it was given."""
SANDBOX_HINT: Final = (
    f"{PROG} sql reads only the traces named on its command line; pass {UNSANDBOX} to let "
    "a statement read or write other files, attach databases or load extensions"
)


def run_query(engine: Engine, text: str, params: Any = None) -> Result:
    """Run ``text``; its columns and rows (none for a statement that returns nothing)."""
    import duckdb

    try:
        cursor = engine.sql(text, params)
        if not cursor.description:
            return [], []
        return [column[0] for column in cursor.description], cursor.fetchall()
    except duckdb.Error as error:
        lines = [line.strip() for line in str(error).splitlines() if line.strip()]
        message = lines[0] if lines else type(error).__name__
        refused = isinstance(error, duckdb.PermissionException)
        if refused or "the configuration has been locked" in message:
            raise QueryError(f"the sandbox refused it: {message}", SANDBOX_HINT) from error
        raise QueryError(message) from error


def count_statements(text: str) -> int | None:
    """How many statements DuckDB's parser finds in *text*; None when it cannot parse it
    (running it says why) or DuckDB is missing (reading the traces says so)."""
    try:
        import duckdb
    except ImportError:
        return None
    try:
        return len(duckdb.extract_statements(text))
    except duckdb.Error:
        return None


# --- output ---------------------------------------------------------------------------------


def _json_value(value: Any) -> Any:
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)  # as OTLP/JSON writes NaN and the infinities
    if isinstance(value, (datetime, date, time)):
        return value.isoformat()
    if isinstance(value, (list, tuple)):
        return [_json_value(item) for item in value]
    if isinstance(value, dict):
        return {str(key): _json_value(item) for key, item in value.items()}
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def _cell(value: Any) -> str:
    if value is None:
        return NULL_TEXT
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, (list, dict)):
        return json.dumps(_json_value(value), separators=(",", ":"))
    return str(value)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float, Decimal)) and not isinstance(value, bool)


def write_result(result: Result, how: str, stream: TextIO) -> None:
    """Print ``result`` as a table, CSV (a header row) or JSON lines (an object a row)."""
    columns, rows = result
    if not columns:
        return
    if how == "json":
        for row in rows:
            record = {name: _json_value(value) for name, value in zip(columns, row, strict=True)}
            stream.write(json.dumps(record, ensure_ascii=False, allow_nan=False) + "\n")
    elif how == "csv":
        writer = csv.writer(stream, lineterminator="\n")
        writer.writerow(columns)
        writer.writerows(["" if v is None else _cell(v) for v in row] for row in rows)
    else:
        align: list[Align] = [
            ">" if rows and all(_is_number(row[i]) or row[i] is None for row in rows) else "<"
            for i in range(len(columns))
        ]
        print_lines(format_table(columns, [[_cell(v) for v in row] for row in rows], align), stream)


# --- the command ----------------------------------------------------------------------------


def run_statements(
    args: argparse.Namespace,
    parser: argparse.ArgumentParser,
    work: Callable[[Engine], int],
    **options: Any,
) -> int:
    """Run *work* over the engine (:func:`~nemo.lens.cli._common.with_engine`); a statement
    the engine rejects is a usage error (exit 2), reported through *parser*'s name."""
    from nemo.lens.cli._engine._connect import VIEWS

    try:
        return with_engine(args, work, **options)
    except QueryError as error:
        # DuckDB's message may quote the trace's text: shown visibly, as every message is.
        print_lines([f"{parser.prog}: error: the query failed: {error}"], sys.stderr)
        if error.hint:
            print_lines([f"  hint: {error.hint}"], sys.stderr)
            return EXIT_USAGE
        print(
            f'  hint: the views are {", ".join(VIEWS)}; `{PROG} sql "DESCRIBE spans" '
            "TRACE` lists a view's columns, and docs/sql.md says what each holds",
            file=sys.stderr,
        )
        return EXIT_USAGE


def cmd_sql(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    if not args.query.strip():
        parser.error("the query is empty: give a statement such as 'SELECT * FROM steps LIMIT 5'")
    statements = count_statements(args.query)
    if statements is not None and statements != 1:
        parser.error(
            f"the query holds {statements} statements; give one a call (run "
            f"{PROG} sql once per statement, or join them with UNION ALL or a WITH clause)"
            if statements
            else "the query holds no statement, only comments: give one such as "
            "'SELECT * FROM steps LIMIT 5'"
        )

    def work(engine: Engine) -> int:
        write_result(run_query(engine, args.query), args.format, sys.stdout)
        return EXIT_OK

    sandbox = not args.allow_external_access
    return run_statements(args, parser, work, detail=True, sandbox=sandbox)


# --- check --------------------------------------------------------------------------------

_CEILING: Final = "per_step"
"""The most frequent tier that still fires at most once per iteration."""
_PER_LIFETIME: Final = "once"
"""The tier bounded per process lifetime rather than per iteration."""


def _check_tables(engine: Engine, enabled: Sequence[str]) -> dict[str, Any]:
    """The tables ``queries/check.sql`` reads (the tiers, the enabled groups); its parameters."""
    from nemo.lens.codegen.model import PRODUCTION_PRESET, QUIET_TIERS, TIERS

    ceiling = TIERS.index(_CEILING)
    engine.table(
        "check_tiers",
        "fires VARCHAR, position INT, per_lifetime INT, per_iteration DOUBLE, quiet BOOLEAN",
        [
            (
                tier,
                position,
                1 if tier == _PER_LIFETIME else None,
                1.0 if position <= ceiling and tier != _PER_LIFETIME else None,
                tier in QUIET_TIERS,
            )
            for position, tier in enumerate(TIERS)
        ],
    )
    engine.table("check_enabled", "span_group VARCHAR", [(group,) for group in enabled])
    return {"preset": PRODUCTION_PRESET, "ceiling": ceiling, "tiers": len(TIERS)}


def _unused_class_groups(engine: Engine) -> frozenset[str]:
    """The groups of the consumer classes none of whose own groups the trace holds (the trace
    does not record the job's class: a class it never used is not checked unless named)."""
    classes = selected_classes(None)
    base = classes[0].ALL_GROUPS
    seen = {row[0] for row in run_query(engine, "SELECT DISTINCT span_group FROM spans")[1]}
    unused = (c.ALL_GROUPS - base for c in classes[1:] if not (c.ALL_GROUPS - base) & seen)
    return frozenset().union(*unused)


def cmd_check(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    enabled: list[str] = []
    if args.spec is not None:
        from nemo.lens.spec import resolve_for

        try:
            enabled = sorted(resolve_for(args.spec, selected_classes(args.class_name)))
        except ValueError as error:
            parser.error(f"--spec {args.spec!r}: {error}")

    def work(engine: Engine) -> int:
        checked = enabled
        if not args.class_name:
            unused = _unused_class_groups(engine)
            checked = [group for group in enabled if group not in unused]
        columns, rows = run_query(engine, query("check"), _check_tables(engine, checked))
        shown = columns[:-1]
        write_result((shown, [row[:-1] for row in rows]), args.format, sys.stdout)
        finding, unseen = columns.index("finding"), columns.index("unseen")
        flagged = [row for row in rows if row[finding]]
        quiet = [f"{row[0]} ({row[1]})" for row in rows if row[unseen] and not row[finding]]
        if quiet:
            message(
                "note", "enabled but not seen, which a run may well not do: " + ", ".join(quiet)
            )
        steps = run_query(engine, "SELECT count(*) FROM steps")[1][0][0]
        if not steps:
            print(
                f"{PROG}: note: the trace holds no step spans: rates per iteration cannot "
                "be measured, only spans per process lifetime",
                file=sys.stderr,
            )
        if flagged:
            print(f"{plural(len(flagged), 'group')} flagged", file=sys.stderr)
            return EXIT_BAD_INPUT
        print("every group within its tier", file=sys.stderr)
        return EXIT_OK

    return run_statements(args, parser, work)
