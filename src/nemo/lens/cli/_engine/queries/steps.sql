-- steps: one row per execution of a training step -- a span whose group feeds the
-- productive bucket and whose category (its own, else its group's) is goodput, as
-- goodput.sql counts them -- with the iteration it executed, its rank and duration.
-- `wasted` is what goodput counts as wasted progress: a step that never finished
-- (truncated), or whose iteration its rank executed again later (after a restart).
CREATE OR REPLACE TEMPORARY VIEW steps AS
SELECT
  s.run_id,
  s.rank,
  s.service,
  s.lifetime,
  s.span_group,
  s.iteration,
  s.start_ns,
  s.end_ns,
  s.duration_ns,
  s.truncated,
  s.truncated OR (
    s.iteration IS NOT NULL AND s.start_ns < MAX(s.start_ns) OVER (
      PARTITION BY s.run_id, s.rank, s.iteration
    )
  ) AS wasted
FROM spans s JOIN span_groups g ON g.span_group = s.span_group
WHERE g.bucket = 'productive' AND coalesce(s.span_category, g.category) = 'goodput'
