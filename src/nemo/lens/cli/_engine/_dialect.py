"""The packaged queries (``queries/*.sql``, SQL that DuckDB and Spark SQL 3.5 both run) with
their macros expanded for an engine: ``{percentile(x, q)}``, ``{intdiv(a, b)}``,
``{json_text(x, key)}``, ``{floor_of_largest(x, n, p)}``, ``{lag_of_nonnull(x)}`` and
``{not_materialized()}``.
:class:`Dialect` says what each means and how each engine spells it."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Final

__all__ = ["DUCKDB", "SPARK", "Dialect", "query"]


@dataclass(frozen=True)
class Dialect:
    """How one engine spells what the dialects disagree on."""

    name: str
    percentile: str
    """A function of (value, fraction) interpolating linearly (DuckDB's ``quantile_cont``,
    Spark's ``percentile``: both as numpy does)."""
    intdiv: str
    """Integer division of two integers (rounding toward zero)."""
    json_text: str = "json_extract_string({0}, '$.\"{1}\"')"
    """A template of (JSON text, key): the top-level key's value as text (a key may hold
    dots), or NULL."""
    floor_of_largest: str = "list_min(max({0}, {1}) OVER (PARTITION BY {2}))"
    """A template of (value, n, partition), a window: a value no greater than the
    partition's *n*-th largest, its least when it holds fewer. DuckDB's is that value (its
    ``max`` with a count keeps the *n* largest in a heap)."""
    lag_of_nonnull: str = "LAG({0} IGNORE NULLS)"
    """A template of (value), before ``OVER (...)``: the last non-null value before the row."""
    not_materialized: str = "NOT MATERIALIZED"
    """The keyword that keeps a CTE from being stored (``name AS {not_materialized()} (...)``):
    DuckDB stores one read twice, in memory, where computing it again costs a scan; Spark
    computes a CTE where it is read."""


DUCKDB: Final = Dialect("duckdb", "quantile_cont", "divide")
SPARK: Final = Dialect(
    "spark",
    "percentile",
    "div",
    "get_json_object({0}, '$[''{1}'']')",
    floor_of_largest="min({0}) OVER (PARTITION BY {2})",  # the least: Spark sorts them all
    lag_of_nonnull="LAG({0}) IGNORE NULLS",
    not_materialized="",
)

_MACRO: Final = re.compile(r"\{(\w+)\(([^{}]*)\)\}")


@cache
def _text(name: str) -> str:
    return (resources.files(__package__) / "queries" / f"{name}.sql").read_text(encoding="utf-8")


def query(name: str, dialect: Dialect = DUCKDB) -> str:
    """The query ``queries/<name>.sql`` in *dialect*'s spelling."""

    def expand(found: re.Match[str]) -> str:
        function, arguments = found.group(1), found.group(2)
        spelled = getattr(dialect, function, None)
        if not isinstance(spelled, str):
            raise ValueError(f"{name}.sql: unknown macro {{{function}(...)}}")
        if "{0}" in spelled:
            return spelled.format(*(part.strip() for part in arguments.split(",")))
        if not spelled.isidentifier():  # a keyword, or nothing
            return spelled
        return f"{spelled}({arguments})"

    return _MACRO.sub(expand, _text(name))
