"""``nemo-lens sql``: one SQL statement over the engine's views, printed as a table, CSV or
JSON lines. A statement the engine rejects is a usage error (exit 2)."""

from __future__ import annotations

import argparse
import csv
import json
import math
import sys
from collections.abc import Callable
from datetime import date, datetime, time
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Final, TextIO

from nemo.lens.cli._common import EXIT_OK, EXIT_USAGE, PROG, print_lines, with_engine
from nemo.lens.cli._table import Align, format_table

if TYPE_CHECKING:
    from nemo.lens.cli._engine import Engine

__all__ = [
    "FORMATS",
    "Result",
    "cmd_sql",
    "run_query",
    "run_statements",
    "write_result",
]

FORMATS: Final = ("table", "csv", "json")
NULL_TEXT: Final = "NULL"
"""How a table shows a missing value (CSV leaves the cell empty, JSON writes null)."""

Result = tuple[list[str], list[tuple[Any, ...]]]
"""A statement's column names and its rows."""


class QueryError(Exception):
    """The engine rejected a statement: the message names the problem."""


def run_query(engine: Engine, text: str, params: Any = None) -> Result:
    """Run ``text``; its columns and rows (none for a statement that returns nothing)."""
    import duckdb

    try:
        cursor = engine.sql(text, params)
        if not cursor.description:
            return [], []
        return [column[0] for column in cursor.description], cursor.fetchall()
    except duckdb.Error as error:
        raise QueryError(_first_line(error)) from error


def _first_line(error: BaseException) -> str:
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return lines[0] if lines else type(error).__name__


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
    *,
    detail: bool = False,
) -> int:
    """Run *work* over the engine (:func:`~nemo.lens.cli._common.with_engine`); a statement
    the engine rejects is a usage error (exit 2), reported through *parser*'s name."""
    from nemo.lens.cli._engine._connect import VIEWS

    try:
        return with_engine(args, work, detail=detail)
    except QueryError as error:
        print(f"{parser.prog}: error: the query failed: {error}", file=sys.stderr)
        print(
            f'  hint: the views are {", ".join(VIEWS)}; `{PROG} sql "DESCRIBE spans" '
            "TRACE` lists a view's columns, and docs/sql.md says what each holds",
            file=sys.stderr,
        )
        return EXIT_USAGE


def cmd_sql(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    if not args.query.strip():
        parser.error("the query is empty: give a statement such as 'SELECT * FROM steps LIMIT 5'")

    def work(engine: Engine) -> int:
        write_result(run_query(engine, args.query), args.format, sys.stdout)
        return EXIT_OK

    return run_statements(args, parser, work, detail=True)
