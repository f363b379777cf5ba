"""The same analysis on Apache Spark: the engine's views over a Parquet dataset, its queries.

When a run's traces outgrow one machine (docs/sql.md says when), convert them
once with ``nemo-lens convert --to parquet`` and hand the dataset to Spark.
:func:`spark_views` defines, on a ``SparkSession``, the views the queries read
-- ``spans`` over the dataset, ``span_groups`` and ``span_group_presets`` from
the span-group classes, and ``steps`` -- and :func:`spark_query` runs a packaged
query (``queries/<name>.sql``) in Spark's spelling: the very text the commands
run on DuckDB, with the dialect's macros expanded (:mod:`._dialect`). There is no
second implementation of any figure.

The dataset's files hold their partition columns (``run_id``, ``rank``) too, so
Spark reads them without partition discovery (``recursiveFileLookup``), which
would otherwise find each column twice. pyspark is not a dependency of
nemo-lens: import this module where Spark runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

from nemo.lens.cli._engine._dialect import SPARK, query
from nemo.lens.cli._engine._groups import group_rows, preset_rows
from nemo.lens.cli._engine._parquet import STORED

if TYPE_CHECKING:
    from nemo.lens.groups import SpanGroup

__all__ = ["VIEWS", "spark_query", "spark_views"]

VIEWS: Final = ("spans", "span_groups", "span_group_presets", "steps")
_GROUPS_SCHEMA: Final = "span_group STRING, category STRING, bucket STRING, fires STRING"
_PRESETS_SCHEMA: Final = "span_group STRING, preset STRING"


def spark_views(
    session: Any,
    dataset: str | Sequence[str],
    span_group_classes: Sequence[type[SpanGroup]] | None = None,
) -> None:
    """Define the engine's views on ``session`` (a ``pyspark.sql.SparkSession``) over the
    Parquet ``dataset`` (a directory ``convert --to parquet`` wrote, or several)."""
    if span_group_classes is None:
        from nemo.lens.cli._classes import span_group_classes as shipped

        span_group_classes = list(shipped().values())
    paths = [dataset] if isinstance(dataset, str) else list(dataset)
    stored = (
        session.read.option("recursiveFileLookup", "true")
        .option("pathGlobFilter", "*.parquet")
        .parquet(*paths)
    )
    stored.createOrReplaceTempView("parquet_spans")
    session.sql(
        "CREATE OR REPLACE TEMPORARY VIEW spans AS "
        f"SELECT {STORED}, false AS reconstructed FROM parquet_spans"
    )
    groups = session.createDataFrame(group_rows(span_group_classes), _GROUPS_SCHEMA)
    groups.createOrReplaceTempView("span_groups")
    presets = session.createDataFrame(preset_rows(span_group_classes), _PRESETS_SCHEMA)
    presets.createOrReplaceTempView("span_group_presets")
    session.sql(query("steps", SPARK))


def spark_query(session: Any, name: str) -> tuple[list[str], list[tuple[Any, ...]]]:
    """Run the packaged query ``name`` on ``session``: its columns and its rows."""
    frame = session.sql(query(name, SPARK))
    return list(frame.columns), [tuple(row) for row in frame.collect()]
