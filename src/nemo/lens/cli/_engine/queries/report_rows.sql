-- The report's timeline rows: one per process (run, rank, service) and span group, with
-- how many spans it holds, when its first span starts and, of the spans starting then, the
-- latest end (so on a tie of starts the enclosing group's row comes first), and when its
-- last span ends.
WITH firsts AS (
  SELECT run_id, rank, service, span_group, count(*) AS spans,
         min(start_ns) AS first_start, max(end_ns) AS last_end
  FROM spans
  GROUP BY run_id, rank, service, span_group
)
SELECT f.run_id, f.rank, f.service, f.span_group, f.spans, f.first_start,
       max(s.end_ns) AS first_end, f.last_end
FROM firsts f JOIN spans s
  ON s.run_id = f.run_id AND s.rank IS NOT DISTINCT FROM f.rank
  AND s.service IS NOT DISTINCT FROM f.service AND s.span_group = f.span_group
  AND s.start_ns = f.first_start
GROUP BY f.run_id, f.rank, f.service, f.span_group, f.spans, f.first_start, f.last_end
