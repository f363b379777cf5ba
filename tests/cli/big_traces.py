"""Traces of millions of spans, written by DuckDB in the ``file`` exporter's format 2.

Python's ``json`` writes about 300,000 lines a second; a ten-million-span test
would spend most of its budget writing its input. DuckDB formats the lines in
SQL, over ``range(N)``, on every core: a million spans take about a second.

The layout is the exporter's (docs/trace-format.md): per rank one lifetime, its
header line first (the resource, once), then its span lines, each naming the
lifetime. Per rank a job span, then per iteration a step with forward/backward
and optimizer spans inside (parent ids point at the enclosing span). Every
step takes :data:`STEP_MS` but the straggler's, which take :data:`SLOW_STEP_MS`
from iteration ``slow_from`` on. Group names come from the generated classes.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import duckdb

from nemo.lens import semconv
from nemo.lens.groups import SpanGroup

__all__ = [
    "EPOCH_NS",
    "PERIOD_MS",
    "SLOW_STEP_MS",
    "STEP_MS",
    "BigTrace",
    "write_big_dataset",
    "write_big_trace",
]

EPOCH_NS: Final = 1_700_000_000_000_000_000
STEP_MS: Final = 10
SLOW_STEP_MS: Final = 13
PERIOD_MS: Final = 14
"""From one step's start to the next's."""
_MS: Final = 1_000_000


@dataclass(frozen=True)
class BigTrace:
    """What :func:`write_big_trace` wrote."""

    path: Path
    spans: int
    ranks: int
    iterations: int
    """Per rank."""
    straggler: int
    slow_from: int
    run_id: str


_LIFETIME_BASE: Final = 0xB16


def _lifetime(rank: int) -> str:
    return f"{_LIFETIME_BASE + rank:016x}"


def _header(run_id: str, rank: int, ranks: int) -> str:
    resource = {
        semconv.SERVICE_NAME: "big",
        semconv.SERVICE_INSTANCE_ID: f"{run_id}-rank{rank}",
        semconv.NEMO_RUN_ID: run_id,
        semconv.DL_RANK: rank,
        semconv.DL_WORLD_SIZE: ranks,
        semconv.LIFETIME_ID: _lifetime(rank),
        semconv.PROCESS_PID: 1000 + rank,
    }
    header = {
        "trace_format": 2,
        "lifetime": _lifetime(rank),
        "writer": "tests.cli.big_traces",
        "resource": resource,
    }
    return json.dumps(header, separators=(",", ":"))


# One row per span: per rank, k = 0 is the job, then 3 per iteration (step,
# forward_backward, optimizer). Span ids are 1 + the row's global number n, so they
# are unique and a child's parent is its step's row; the job's id is its rank's first
# row, whose line the rank's header precedes (DuckDB writes rows in order).
_ROWS_SQL = """
  WITH rows AS (
    SELECT n, n // {count} AS rank, n % {count} AS k,
      CAST((n % {count} - 1) // 3 + 1 AS BIGINT) AS i, (n % {count} - 1) % 3 AS kind
    FROM range({total}) t(n)
  ), timed AS (
    SELECT *, (i - 1) * {period} AS t0,
      CASE WHEN rank = {straggler} AND i >= {slow_from} THEN {slow} ELSE {step} END AS len,
      lpad(lower(to_hex(rank + 1)), 32, '0') AS trace_id,
      lpad(lower(to_hex({lifetime} + rank)), 16, '0') AS lt
    FROM rows
  )"""
"""The spans as rows (both writers' common part): rank, k (0 the job, then 3 per
iteration), i the iteration, kind (0 step, 1 forward/backward, 2 optimizer), t0 the
step's start after the epoch, len the step's length, the trace id and the lifetime."""

_SPANS_SQL = """
COPY (
  {rows}
  SELECT
    CASE WHEN k = 0 THEN {header} || chr(10) ELSE '' END ||
    '{{"name":"' ||
    CASE WHEN k = 0 THEN 'train.job' WHEN kind = 0 THEN 'train.step'
         WHEN kind = 1 THEN 'train.forward_backward' ELSE 'train.optimizer' END ||
    '","trace_id":"' || trace_id || '","span_id":"' || lpad(lower(to_hex(n + 1)), 16, '0') ||
    '","parent_span_id":' ||
    CASE WHEN k = 0 THEN 'null'
         WHEN kind = 0 THEN '"' || lpad(lower(to_hex(n - k + 1)), 16, '0') || '"'
         ELSE '"' || lpad(lower(to_hex(n - kind + 1)), 16, '0') || '"' END ||
    ',"kind":"INTERNAL","start_time_unix_nano":' ||
    CAST({epoch} + CASE WHEN k = 0 THEN 0 WHEN kind = 2 THEN t0 + {fb} ELSE t0 END AS VARCHAR) ||
    ',"end_time_unix_nano":' ||
    CAST({epoch} + CASE WHEN k = 0 THEN {job_end} WHEN kind = 0 THEN t0 + len
                        WHEN kind = 1 THEN t0 + {fb} ELSE t0 + {opt} END AS VARCHAR) ||
    ',"status":{{"code":"UNSET","description":null}},"attributes":{{' ||
    CASE WHEN k = 0 THEN '"lens.group":"{job}","lens.span_category":"goodput"'
         WHEN kind = 0 THEN '"iteration":' || CAST(i AS VARCHAR) ||
                            ',"lens.group":"{step_group}","lens.span_category":"goodput"'
         WHEN kind = 1 THEN '"lens.group":"{fwd}","lens.span_category":"profiling"'
         ELSE '"lens.group":"{opt_group}","lens.span_category":"profiling"' END ||
    '}},"events":[],"links":[],"scope":{{"name":"nemo.lens","version":"0.2.0"}},' ||
    '"lifetime":"' || lt || '"}}' AS line
  FROM timed
) TO '{out}' (FORMAT CSV, HEADER false, QUOTE '', ESCAPE '', DELIMITER '\x01')
"""


# The same spans as the trace tables' Parquet dataset (docs/trace-tables.md, schema 1),
# the rows convert --to parquet writes for the lines above.
_DATASET_SQL = """
COPY (
  {rows}
  SELECT '{run_id}' AS run_id, rank, 'big' AS service, lt AS lifetime,
    CASE WHEN k = 0 THEN 'train.job' WHEN kind = 0 THEN 'train.step'
         WHEN kind = 1 THEN 'train.forward_backward' ELSE 'train.optimizer' END AS name,
    CASE WHEN k = 0 THEN '{job}' WHEN kind = 0 THEN '{step_group}'
         WHEN kind = 1 THEN '{fwd}' ELSE '{opt_group}' END AS span_group,
    trace_id, lpad(lower(to_hex(n + 1)), 16, '0') AS span_id,
    CASE WHEN k = 0 THEN NULL WHEN kind = 0 THEN lpad(lower(to_hex(n - k + 1)), 16, '0')
         ELSE lpad(lower(to_hex(n - kind + 1)), 16, '0') END AS parent_span_id,
    start_ns, end_ns, end_ns - start_ns AS duration_ns, 'UNSET' AS status_code,
    CAST(NULL AS VARCHAR) AS status_description,
    CASE WHEN k > 0 AND kind = 0 THEN i END AS iteration, false AS truncated,
    CASE WHEN k = 0 OR kind = 0 THEN 'goodput' ELSE 'profiling' END AS span_category,
    '{{}}' AS attributes, '[]' AS events, '{{}}' AS resource, 'generated' AS source,
    CAST(n AS BIGINT) AS line
  FROM (
    SELECT *, {epoch} + CASE WHEN k = 0 THEN 0 WHEN kind = 2 THEN t0 + {fb} ELSE t0 END
                AS start_ns,
              {epoch} + CASE WHEN k = 0 THEN {job_end} WHEN kind = 0 THEN t0 + len
                             WHEN kind = 1 THEN t0 + {fb} ELSE t0 + {opt} END AS end_ns
    FROM timed
  )
) TO '{out}' (FORMAT parquet, PARTITION_BY (run_id, rank), WRITE_PARTITION_COLUMNS true,
              FILENAME_PATTERN 'part-{{i}}',
              KV_METADATA {{'{schema_key}': '{schema_version}', '{write_key}': '{write_id}'}})
"""


def _header_sql(run_id: str, ranks: int) -> str:
    """The header line of the row's rank, as a SQL expression (ranks in a CASE)."""
    cases = " ".join(f"WHEN {rank} THEN '{_header(run_id, rank, ranks)}'" for rank in range(ranks))
    return f"(CASE rank {cases} END)"


def _write(
    template: str,
    path: Path,
    spans: int,
    *,
    ranks: int,
    straggler: int,
    slow_from: int,
    run_id: str,
    **extra: object,
) -> BigTrace:
    """Write the generated spans to *path* with the COPY statement *template*, formatted
    with the rows' layout, times and group names (and *extra*)."""
    iterations = max(1, (spans // ranks - 1) // 3)
    count = 1 + 3 * iterations
    group = SpanGroup
    params: dict[str, object] = dict(
        count=count,
        total=ranks * count,
        period=PERIOD_MS * _MS,
        straggler=straggler,
        slow_from=slow_from,
        slow=SLOW_STEP_MS * _MS,
        step=STEP_MS * _MS,
        lifetime=_LIFETIME_BASE,
        epoch=EPOCH_NS,
        fb=6 * _MS,
        opt=8 * _MS,
        job_end=iterations * PERIOD_MS * _MS,
        job=group.JOB,
        step_group=group.STEP,
        fwd=group.FORWARD_BACKWARD,
        opt_group=group.OPTIMIZER,
    )
    rows = _ROWS_SQL.format(**params)
    sql = template.format(**params, rows=rows, out=path, run_id=run_id, **extra)
    connection = duckdb.connect()
    try:
        connection.execute("SET preserve_insertion_order = true")
        # A partition's rows are written every 65,536 (not 524,288): ten million spans in
        # 4 partitions stay in a few hundred MB.
        connection.execute("SET partitioned_write_flush_threshold = 65536")
        connection.execute(sql)
    finally:
        connection.close()
    return BigTrace(path, ranks * count, ranks, iterations, straggler, slow_from, run_id)


def write_big_trace(
    path: Path,
    spans: int,
    *,
    ranks: int = 4,
    straggler: int = 2,
    slow_from: int = 500,
    run_id: str = "bigrun",
) -> BigTrace:
    """Write about ``spans`` spans over ``ranks`` ranks to ``path`` (a new file)."""
    return _write(
        _SPANS_SQL,
        path,
        spans,
        ranks=ranks,
        straggler=straggler,
        slow_from=slow_from,
        run_id=run_id,
        header=_header_sql(run_id, ranks),
    )


def write_big_dataset(
    directory: Path,
    spans: int,
    *,
    ranks: int = 4,
    straggler: int = 2,
    slow_from: int = 500,
    run_id: str = "bigrun",
) -> BigTrace:
    """Write the spans :func:`write_big_trace` would, as the Parquet dataset ``convert --to
    parquet`` makes of them, straight to ``directory`` (ten million spans in about 40 s on 2
    cores, where writing and converting the JSON lines takes 100 s). Attributes, events and
    resource are left empty: the figures read the columns."""
    from nemo.lens.cli._engine._parquet import SCHEMA_KEY, SCHEMA_VERSION, WRITE_KEY

    return _write(
        _DATASET_SQL,
        directory,
        spans,
        ranks=ranks,
        straggler=straggler,
        slow_from=slow_from,
        run_id=run_id,
        schema_key=SCHEMA_KEY,
        schema_version=SCHEMA_VERSION,
        write_key=WRITE_KEY,
        write_id=uuid.uuid4().hex,
    )
