-- Every step span (its group feeds the productive bucket, its category, else its group's,
-- is goodput) of every process (run, rank, service) as the report's step chart plots it:
-- x is its iteration, else its place among its process's steps in start order; wasted as
-- the steps view has it (truncated, or its iteration ran again later); and how many steps
-- its process has.
WITH step_spans AS (
  SELECT s.run_id, s.rank, s.service, s.name, s.iteration, s.start_ns, s.end_ns,
         s.duration_ns, s.truncated
  FROM spans s JOIN span_groups g ON g.span_group = s.span_group
  WHERE g.bucket = 'productive' AND coalesce(s.span_category, g.category) = 'goodput'
)
SELECT run_id, rank, service, iteration,
       coalesce(iteration, row_number() OVER (
         PARTITION BY run_id, rank, service ORDER BY start_ns, end_ns DESC, name
       )) AS x,
       duration_ns,
       truncated OR (iteration IS NOT NULL AND start_ns < max(start_ns) OVER (
         PARTITION BY run_id, rank, service, iteration
       )) AS wasted,
       count(*) OVER (PARTITION BY run_id, rank, service) AS steps
FROM step_spans
