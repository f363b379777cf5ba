"""The engine's views over a Parquet dataset on Apache Spark, and its queries in Spark's
spelling: the very text the commands run on DuckDB (docs/sql.md). pyspark is not a
dependency of nemo-lens: import this module where Spark runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

from nemo.lens.cli._classes import group_rows, preset_rows
from nemo.lens.cli._engine._connect import VIEWS
from nemo.lens.cli._engine._dialect import SPARK, query
from nemo.lens.cli._engine._parquet import STORED

if TYPE_CHECKING:
    from nemo.lens.groups import SpanGroup

__all__ = ["VIEWS", "spark_query", "spark_views"]

_GROUPS_SCHEMA: Final = (
    "span_group STRING, category STRING, bucket STRING, fires STRING, sync BOOLEAN"
)
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
    # The files hold their partition columns: partition discovery would find each twice.
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
