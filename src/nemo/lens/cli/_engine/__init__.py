"""The trace engine: every command's figures are SQL over one DuckDB connection.

:func:`connect` reads the inputs into the views the queries read (``docs/trace-tables.md``);
the queries (``queries/*.sql``) are written once, in SQL that Apache Spark also runs.
"""

from __future__ import annotations

from nemo.lens.cli._engine._careful import Location, Problem, TraceInputError
from nemo.lens.cli._engine._connect import Engine, EngineUnavailable, connect
from nemo.lens.cli._engine._dialect import DUCKDB, SPARK, Dialect, query

__all__ = [
    "DUCKDB",
    "SPARK",
    "Dialect",
    "Engine",
    "EngineUnavailable",
    "Location",
    "Problem",
    "TraceInputError",
    "connect",
    "query",
]
