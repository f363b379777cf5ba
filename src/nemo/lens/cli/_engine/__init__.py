"""The trace engine: every command's figures are SQL over one DuckDB connection.

:func:`connect` reads the inputs -- the ``file`` exporter's JSON lines (trace
formats 1 and 2), captured ``console`` output, Parquet datasets written by
``nemo-lens convert --to parquet`` -- and defines the views the queries read
(``docs/trace-tables.md`` is their contract):

``spans``
    one row per span, finished or reconstructed (a span its dead process left
    open, ended at its lifetime's last record and marked ``truncated``);
``span_groups``, ``span_group_presets``
    the groups the selected span-group classes know, with their category and
    goodput bucket, and the presets that hold each.

DuckDB reads a regular file itself, in parallel. Every record is checked as it
is read (:mod:`nemo.lens.cli._engine._jsonl`); when one fails a check, or
DuckDB refuses a file, the careful line reader (:mod:`nemo.lens.cli._trace_io`)
reads the JSON-lines inputs instead: it names the file and line of the first
bad one, or with ``skip_invalid`` skips them, and what it read goes through the
same SQL. The queries (``queries/*.sql``) are written once, in SQL that Apache
Spark also accepts (:mod:`nemo.lens.cli._engine._dialect`).
"""

from __future__ import annotations

from nemo.lens.cli._engine._connect import Engine, EngineUnavailable, connect, duckdb_module
from nemo.lens.cli._engine._dialect import DUCKDB, SPARK, Dialect, query

__all__ = [
    "DUCKDB",
    "SPARK",
    "Dialect",
    "Engine",
    "EngineUnavailable",
    "connect",
    "duckdb_module",
    "query",
]
