-- Every span with its place in a Chrome trace's writing order: process (rank order, an
-- unknown rank last, then run and service), start, the longer first, and on a tie of both
-- the parent before its child (depth in its trace's span tree; 0 for roots and orphans).
WITH RECURSIVE tree (trace_id, span_id, depth) AS (
  SELECT s.trace_id, s.span_id, 0 FROM spans s
  WHERE s.span_id IS NOT NULL AND (s.parent_span_id IS NULL OR NOT EXISTS (
    SELECT 1 FROM spans p WHERE p.trace_id = s.trace_id AND p.span_id = s.parent_span_id
  ))
  UNION ALL
  SELECT c.trace_id, c.span_id, t.depth + 1
  FROM spans c JOIN tree t ON c.trace_id = t.trace_id AND c.parent_span_id = t.span_id
  WHERE t.depth < 256
),
depths AS (
  SELECT trace_id, span_id, max(depth) AS depth FROM tree GROUP BY trace_id, span_id
)
SELECT s.run_id, s.rank, s.service, s.span_group, s.name, s.start_ns, s.end_ns,
       s.status_code, s.status_description, s.trace_id, s.span_id, s.parent_span_id,
       s.attributes, s.events,
       row_number() OVER (
         ORDER BY s.rank IS NULL, coalesce(s.rank, 0), s.run_id, s.service, s.start_ns,
                  s.end_ns DESC, coalesce(d.depth, 0), s.source, s.line, s.name, s.span_id
       ) AS position
FROM spans s LEFT JOIN depths d ON d.trace_id = s.trace_id AND d.span_id = s.span_id
