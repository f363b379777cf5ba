-- Stragglers by arrival (docs/stragglers.md): per run, sync group (span_groups.sync) and
-- rank, how late the rank reached the group's spans against the median rank, iteration by
-- iteration, and how often it was the last to arrive. A rank's arrival at an iteration is
-- the start of its first span of the group there, in the last lifetime that executed it (a
-- re-executed iteration counts once); a span without an iteration of its own takes its
-- rank's step that contains its start. Iterations fewer than two ranks reached are left out.
-- The last rank of an iteration arrived after the median (a tie: the lowest rank). The
-- score is the group's median span duration over itself plus the rank's median lateness
-- (1: on time; towards 0: the others wait on it); persistent: last at most iterations.
WITH sync_spans AS (
  SELECT s.run_id, s.rank, s.lifetime, s.span_group, s.start_ns, s.duration_ns, s.iteration,
    {json_text(s.resource, host.name)} AS node
  FROM spans s JOIN span_groups g ON g.span_group = s.span_group
  WHERE g.sync AND s.rank IS NOT NULL
),
timeline AS (
  SELECT run_id, rank, lifetime, CAST(NULL AS STRING) AS span_group, start_ns, end_ns,
    iteration, CAST(NULL AS STRING) AS node, 1 AS is_step
  FROM steps
  WHERE iteration IS NOT NULL AND rank IS NOT NULL
  UNION ALL
  SELECT run_id, rank, lifetime, span_group, start_ns, CAST(NULL AS BIGINT) AS end_ns,
    iteration, node, 0 AS is_step
  FROM sync_spans
),
placed AS (
  -- A lifetime's iterations rise with time: the latest step so far is the enclosing one.
  SELECT run_id, rank, lifetime, span_group, start_ns, node, is_step,
    coalesce(iteration, CASE WHEN start_ns < step_end_ns THEN step_iteration END) AS iteration
  FROM (
    SELECT *,
      MAX(CASE WHEN is_step = 1 THEN iteration END) OVER so_far AS step_iteration,
      MAX(CASE WHEN is_step = 1 THEN end_ns END) OVER so_far AS step_end_ns
    FROM timeline
    WINDOW so_far AS (
      PARTITION BY run_id, rank, lifetime ORDER BY start_ns, is_step DESC
      ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW
    )
  ) AS t
  WHERE is_step = 0
),
arrived AS (
  SELECT run_id, rank, span_group, iteration, lifetime, MIN(start_ns) AS arrival_ns,
    MAX(node) AS node
  FROM placed
  WHERE iteration IS NOT NULL
  GROUP BY run_id, rank, span_group, iteration, lifetime
),
latest AS (
  SELECT run_id, rank, span_group, iteration, arrival_ns, node
  FROM (
    SELECT *, ROW_NUMBER() OVER (
      PARTITION BY run_id, rank, span_group, iteration ORDER BY arrival_ns DESC
    ) AS execution
    FROM arrived
  ) AS a
  WHERE execution = 1
),
late AS (
  -- Arrivals as offsets from the iteration's first: doubles hold them exactly, where the
  -- median of nanoseconds since 1970 would lose the last few hundred.
  SELECT run_id, rank, span_group, iteration, node, place, ranks,
    offset_ns - {percentile(offset_ns, 0.5)} OVER whole AS lateness_ns
  FROM (
    SELECT *, arrival_ns - MIN(arrival_ns) OVER whole AS offset_ns,
      ROW_NUMBER() OVER point AS place, COUNT(*) OVER whole AS ranks
    FROM latest
    WINDOW point AS (PARTITION BY run_id, span_group, iteration ORDER BY arrival_ns DESC, rank),
      whole AS (PARTITION BY run_id, span_group, iteration)
  ) AS l
  WINDOW whole AS (PARTITION BY run_id, span_group, iteration)
),
typical AS (
  SELECT run_id, span_group, {percentile(duration_ns, 0.5)} AS duration_ns
  FROM sync_spans
  GROUP BY run_id, span_group
),
per_rank AS (
  SELECT run_id, span_group, rank, MAX(node) AS node, COUNT(*) AS iterations,
    SUM(CASE WHEN place = 1 AND lateness_ns > 0 THEN 1 ELSE 0 END) AS times_last,
    {percentile(lateness_ns, 0.5)} AS median_lateness_ns,
    MAX(lateness_ns) AS max_lateness_ns
  FROM late
  WHERE ranks > 1
  GROUP BY run_id, span_group, rank
)
SELECT
  r.run_id,
  r.span_group,
  r.rank,
  coalesce(r.node, '') AS node,
  r.iterations,
  r.times_last,
  ROUND(r.times_last / CAST(r.iterations AS DOUBLE), 4) AS last_share,
  CAST(ROUND(r.median_lateness_ns) AS BIGINT) AS median_lateness_ns,
  CAST(ROUND(r.max_lateness_ns) AS BIGINT) AS max_lateness_ns,
  ROUND(
    CASE WHEN r.median_lateness_ns <= 0 THEN 1.0
         ELSE t.duration_ns / (t.duration_ns + r.median_lateness_ns) END, 4
  ) AS score,
  CASE WHEN 2 * r.times_last > r.iterations THEN 'persistent'
       WHEN r.times_last > 0 THEN 'rotating' ELSE '' END AS pattern
FROM per_rank r
JOIN typical t ON t.run_id = r.run_id AND t.span_group = r.span_group
ORDER BY score, r.times_last DESC, r.run_id, r.span_group, r.rank
