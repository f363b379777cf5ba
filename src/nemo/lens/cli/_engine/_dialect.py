"""The computation queries, written once, and the few functions whose names differ by engine.

A query file under ``queries/`` is SQL that both DuckDB and Apache Spark SQL 3.5
accept, reading only the ``spans`` and ``span_groups`` views. Where the two
dialects spell a function differently the query writes a macro in braces,
``{percentile(x, 0.5)}``, which :func:`query` expands for the engine: DuckDB's
``quantile_cont`` and Spark's ``percentile`` both interpolate linearly between
the two nearest ranks (numpy's default), so both give the same figure.
"""

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
    """A function of (value, fraction) interpolating linearly."""


DUCKDB: Final = Dialect("duckdb", "quantile_cont")
SPARK: Final = Dialect("spark", "percentile")

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
        return f"{spelled}({arguments})"

    return _MACRO.sub(expand, _text(name))
