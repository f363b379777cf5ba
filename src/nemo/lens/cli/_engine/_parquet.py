"""The trace tables' Parquet dataset (``convert --to parquet``: ``DIR/run_id=R/rank=N/``, the
``spans`` columns, the schema version in each file's metadata; docs/trace-tables.md), and the
view every command reads it through."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Final

from nemo.lens.cli._engine._jsonl import quote, whole_number

__all__ = [
    "OPEN_FILES",
    "SCHEMA_KEY",
    "SCHEMA_VERSION",
    "SIZES_SQL",
    "WRITE_KEY",
    "copy_sql",
    "footers_sql",
    "parquet_view",
    "rows_per_group",
]

SCHEMA_VERSION: Final = 1
"""The version of the dataset's schema (a reader meeting a newer one should stop)."""
SCHEMA_KEY: Final = "nemo.lens.trace_tables"
WRITE_KEY: Final = "nemo.lens.trace_tables.write"
"""Each file's metadata names the write that made it (a random id): one ``convert`` writes a
new directory from spans already counted once, so the files of one write hold each span
once and the engine does not check them against one another."""

STORED: Final = (
    "run_id, rank, service, lifetime, name, span_group, trace_id, span_id, parent_span_id, "
    "start_ns, end_ns, duration_ns, status_code, status_description, iteration, truncated, "
    "span_category, attributes, events, resource, source, line"
)
"""The stored columns (the view's, less ``reconstructed``: stored spans are just spans)."""


WRITE_BUFFER_BYTES: Final = 64 << 20
"""What the partitioned writer may hold in rows not yet written, over all partitions: it
keeps each partition's rows until it has enough for a row group, and cannot spill them."""
_ROW_GROUP_ROWS: Final = (2048, 122_880)
"""The fewest and most rows a row group holds: DuckDB writes whole vectors of 2,048 rows,
and the most is its default."""


OPEN_FILES: Final = 100
"""How many partitions' files the writer keeps open (DuckDB's default, set explicitly):
past it, it writes out and closes one, and a later row of that partition starts a new
file, so no more than this many partitions hold rows at once."""


def rows_per_group(partitions: int, row_bytes: float) -> int:
    """The rows each partition buffers before it writes a row group: the buffers of the
    partitions open at once, of rows of about *row_bytes*, stay within the write buffer."""
    fewest, most = _ROW_GROUP_ROWS
    rows = int(WRITE_BUFFER_BYTES / min(max(1, partitions), OPEN_FILES) / max(1.0, row_bytes))
    return max(fewest, min(most, rows))


_AS_TEXT: Final = ", ".join(f"{column}::VARCHAR" for column in STORED.split(", "))
SIZES_SQL: Final = f"""
SELECT (SELECT count(DISTINCT (run_id, rank)) FROM spans),
       (SELECT coalesce(avg(strlen(concat({_AS_TEXT}))), 0) FROM (SELECT * FROM spans LIMIT 10000))
"""
"""How many partitions the dataset will have, and about how many bytes a row holds
(its columns as text, over the first rows)."""


def copy_sql(directory: str, rows: int) -> str:
    """The statement that writes the ``spans`` view to the dataset *directory*, each
    partition's rows in row groups of *rows* (see :func:`rows_per_group`)."""
    metadata = {SCHEMA_KEY: str(SCHEMA_VERSION), WRITE_KEY: uuid.uuid4().hex}
    pairs = ", ".join(f"{quote(key)}: {quote(value)}" for key, value in metadata.items())
    return (
        f"COPY (SELECT {STORED} FROM spans) TO {quote(directory)} (FORMAT parquet, "
        "PARTITION_BY (run_id, rank), WRITE_PARTITION_COLUMNS true, OVERWRITE_OR_IGNORE true, "
        f"COMPRESSION zstd, ROW_GROUP_SIZE {rows}, FILENAME_PATTERN 'part-{{i}}', "
        f"KV_METADATA {{{pairs}}})"
    )


_TYPED: Final = {
    **dict.fromkeys(("rank", "start_ns", "end_ns", "duration_ns", "iteration", "line"), "INT"),
    "truncated": "BOOLEAN",
}
"""The columns the figures compute on, and the Parquet physical type each must have (INT:
INT32 or INT64)."""


def footers_sql(files: Sequence[str]) -> str:
    """Per file of *files* (by name): its columns, those of them whose type the figures
    cannot read (:data:`_TYPED`), its trace tables version and the write that made it
    (NULL where its metadata has none)."""
    listing = "[" + ", ".join(quote(f) for f in files) + "]"
    wrong = " OR ".join(
        f"(name = {quote(column)} AND type NOT IN "
        f"({', '.join(map(quote, ('INT32', 'INT64') if kind == 'INT' else (kind,)))}))"
        for column, kind in _TYPED.items()
    )

    def value(key: str) -> str:
        return f"max(CASE WHEN decode(key) = {quote(key)} THEN decode(value) END)"

    return f"""
SELECT c.file_name, c.columns, c.mistyped, k.version, k.write
FROM (
  SELECT file_name, list(name) AS columns, list(name) FILTER (WHERE {wrong}) AS mistyped
  FROM parquet_schema({listing}) GROUP BY file_name
) c
LEFT JOIN (
  SELECT file_name, {value(SCHEMA_KEY)} AS version, {value(WRITE_KEY)} AS write
  FROM parquet_kv_metadata({listing}) GROUP BY file_name
) k ON k.file_name = c.file_name
"""


def parquet_view(files: Sequence[str], iteration: str, detail: bool, labels: bool = True) -> str:
    """The view ``parquet_spans`` over the dataset's *files*; without *detail* the
    attributes, events and resource are NULL, without *labels* the name, trace id and
    parent id (as the JSON lines' staging leaves them)."""
    listing = "[" + ", ".join(quote(f) for f in files) + "]"
    nothing = "CAST(NULL AS VARCHAR)"
    if iteration == "iteration":
        iterations = "iteration"
    else:
        value = f"json_extract(attributes, {quote(chr(36) + '.' + chr(34) + iteration + chr(34))})"
        iterations = whole_number(value)
    return f"""
CREATE OR REPLACE TEMP VIEW parquet_spans AS
SELECT run_id, CAST(rank AS BIGINT) AS rank, service, lifetime,
       {"name" if labels else nothing} AS name, span_group,
       {"trace_id" if labels else nothing} AS trace_id, span_id,
       {"parent_span_id" if labels else nothing} AS parent_span_id, start_ns,
       end_ns, duration_ns, status_code, status_description,
       {iterations} AS iteration, truncated, span_category,
       {"attributes" if detail else nothing} AS attributes,
       {"events" if detail else nothing} AS events,
       {"resource" if detail else nothing} AS resource,
       source, line, false AS reconstructed, trace_id AS trace_key
FROM read_parquet({listing}, hive_partitioning = false, union_by_name = true)
"""
