"""The views over the staged JSON lines (:mod:`._jsonl`): the records of each lifetime related.

A span line gets its header's resource (:data:`RESOLVED_VIEW`); a span recorded open whose
line never came (its process died) is ended at its lifetime's last recorded instant, marked
truncated (:func:`dead_sql`). :data:`SPANS_VIEW` is both.
"""

from __future__ import annotations

from typing import Final

from nemo.lens import semconv
from nemo.lens.cli._engine._jsonl import LINES_TABLE, quote

__all__ = ["NO_GROUP", "RESOLVED_VIEW", "SPANS_VIEW", "dead_sql"]

NO_GROUP: Final = "(none)"
"""The group of a span that carries no ``lens.group`` (nor old ``nemo.span_group``)."""

RESOLVED_VIEW: Final = f"""
CREATE OR REPLACE TEMP VIEW jsonl_resolved AS
WITH heads AS (
  SELECT named AS lifetime, any_value(res_rank) AS rank, any_value(res_run) AS run_id,
         any_value(res_service) AS service, any_value(resource) AS resource
  FROM {LINES_TABLE} WHERE kind = 'header' GROUP BY named
)
SELECT l.*,
       CASE WHEN l.uses_header THEN h.rank ELSE l.res_rank END AS rank,
       CASE WHEN l.uses_header THEN coalesce(h.run_id, '') ELSE l.res_run END AS run_id,
       CASE WHEN l.uses_header THEN coalesce(h.service, '') ELSE l.res_service END AS service,
       CASE WHEN l.uses_header THEN coalesce(h.resource, l.resource) ELSE l.resource END
         AS resource_text,
       coalesce(l.named, l.res_lifetime) AS lifetime
FROM {LINES_TABLE} l LEFT JOIN heads h ON l.uses_header AND h.lifetime = l.named
WHERE l.kind IN ('span', 'sdk', 'open')
"""
"""Every span and open-span record with its lifetime's resource (a format-2 line's from
its header)."""

_DEAD_COLUMNS: Final = f"""
SELECT d.run_id, d.rank, d.service, d.lifetime, d.name,
       coalesce(d.span_group, {quote(NO_GROUP)}) AS span_group,
       d.trace_id, d.span_id, d.parent_span_id, d.start_ns,
       greatest(l.last_ns, d.start_ns) AS end_ns,
       greatest(l.last_ns, d.start_ns) - d.start_ns AS duration_ns,
       d.status_code, d.status_description, d.iteration, true AS truncated, d.span_category,
       CASE WHEN d.attributes IS NOT NULL THEN json_merge_patch(d.attributes,
         {quote('{"' + semconv.SPAN_TRUNCATED + '": true}')}) END AS attributes,
       CASE WHEN d.events IS NOT NULL THEN CAST(to_json(list_append(
         CAST(d.events AS JSON[]),
         json_object('name', {quote(semconv.SPAN_TRUNCATED_EVENT)},
                     'time_unix_nano', greatest(l.last_ns, d.start_ns),
                     'attributes', json_object({quote(semconv.SPAN_TRUNCATED_REASON)},
                                               {quote(semconv.SPAN_TRUNCATED_PROCESS_ENDED)}))))
       AS VARCHAR) END AS events,
       d.resource_text AS resource, d.source, CAST(NULL AS BIGINT) AS line,
       true AS reconstructed
"""


def dead_sql(any_open: bool) -> str:
    """The statement that creates the table ``jsonl_dead``: each span recorded open whose
    line never came (its process died), ended at its lifetime's last recorded instant.
    Without open records (*any_open* false) it is empty and nothing else is read."""
    if not any_open:
        return (
            f"CREATE OR REPLACE TEMP TABLE jsonl_dead AS {_DEAD_COLUMNS}"
            "FROM jsonl_resolved d, (SELECT NULL::BIGINT AS last_ns) l WHERE false"
        )
    return f"""
CREATE OR REPLACE TEMP TABLE jsonl_dead AS
WITH opened AS (
  SELECT * FROM (
    SELECT *, row_number() OVER (PARTITION BY lifetime, span_id ORDER BY source, latest_ns) AS nth
    FROM jsonl_resolved WHERE kind = 'open' AND span_id IS NOT NULL
  ) WHERE nth = 1
), ended AS (
  SELECT DISTINCT r.lifetime, r.span_id FROM jsonl_resolved r
  SEMI JOIN opened o ON o.lifetime = r.lifetime AND o.span_id = r.span_id
  WHERE r.kind <> 'open'
), last AS (
  SELECT coalesce(named, res_lifetime) AS lifetime, max(latest_ns) AS last_ns
  FROM {LINES_TABLE} WHERE kind IN ('span', 'open', 'alive') GROUP BY 1
), dead AS (
  SELECT o.* FROM opened o ANTI JOIN ended e ON e.lifetime = o.lifetime AND e.span_id = o.span_id
)
{_DEAD_COLUMNS}
FROM dead d JOIN last l ON l.lifetime = d.lifetime
"""


SPANS_VIEW: Final = f"""
CREATE OR REPLACE TEMP VIEW jsonl_spans AS
SELECT run_id, rank, service, lifetime, name, coalesce(span_group, {quote(NO_GROUP)}) AS span_group,
       trace_id, span_id, parent_span_id, start_ns, end_ns, end_ns - start_ns AS duration_ns,
       status_code, status_description, iteration, truncated, span_category,
       attributes, events, resource_text AS resource, source, CAST(NULL AS BIGINT) AS line,
       false AS reconstructed
FROM jsonl_resolved WHERE kind <> 'open'
UNION ALL
SELECT * FROM jsonl_dead
"""
"""The spans of the JSON lines: every finished span, and the dead process's (see
:func:`dead_sql`; :data:`RESOLVED_VIEW` and that table first)."""
