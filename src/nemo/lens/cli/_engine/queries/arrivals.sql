-- Stragglers by arrival (docs/stragglers.md): per run, sync group (span_groups.sync) and
-- rank, how late the rank reached the group's spans against the median rank, iteration by
-- iteration, and how often it was the last to arrive. A rank's arrival at an iteration is
-- the start of its first span of the group there, in the last lifetime that executed it (a
-- re-executed iteration counts once); a span without an iteration of its own takes its
-- rank's step that contains its start. Iterations fewer than two ranks reached are left out.
-- The last rank of an iteration arrived after the median (ranks tied: each). The
-- score is the group's median span duration over itself plus the rank's median lateness
-- (1: on time; towards 0: the others wait on it); persistent: last at most iterations.
WITH sync_groups AS (
  SELECT span_group, ROW_NUMBER() OVER (ORDER BY span_group) AS group_no
  FROM span_groups
  WHERE sync
),
runs AS (
  -- Runs and groups by number: DuckDB sorts and groups on integers several times faster.
  -- Times as offsets from the run's first span: doubles (the median) hold them exactly,
  -- where nanoseconds since 1970 would lose their last few hundred.
  SELECT run_id, MIN(start_ns) AS base_ns, ROW_NUMBER() OVER (ORDER BY run_id) AS run_no
  FROM spans
  GROUP BY run_id
),
sync_spans AS (
  SELECT r.run_no, s.rank, s.lifetime, g.group_no, s.start_ns - r.base_ns AS at_ns,
    s.duration_ns, s.iteration
  FROM spans s
  JOIN sync_groups g ON g.span_group = s.span_group
  JOIN runs r ON r.run_id = s.run_id
  WHERE s.rank IS NOT NULL
),
nodes AS (
  -- A lifetime has one resource: its host.name is read once, not once a span.
  SELECT r.run_no, l.rank, MAX({json_text(l.resource, host.name)}) AS node
  FROM (
    SELECT s.run_id, s.rank, s.lifetime, MIN(s.resource) AS resource
    FROM spans s JOIN sync_groups g ON g.span_group = s.span_group
    WHERE s.rank IS NOT NULL
    GROUP BY s.run_id, s.rank, s.lifetime
  ) AS l
  JOIN runs r ON r.run_id = l.run_id
  GROUP BY r.run_no, l.rank
),
timeline AS (
  -- The spans without an iteration, and the steps that give them theirs.
  SELECT CAST(NULL AS BIGINT) AS run_no, s.rank, s.lifetime, CAST(NULL AS BIGINT) AS group_no,
    s.start_ns - r.base_ns AS at_ns, s.end_ns - r.base_ns AS end_ns, s.iteration, 1 AS is_step
  FROM steps s JOIN runs r ON r.run_id = s.run_id
  WHERE s.iteration IS NOT NULL AND s.rank IS NOT NULL
  UNION ALL
  SELECT run_no, rank, lifetime, group_no, at_ns, CAST(NULL AS BIGINT) AS end_ns,
    CAST(NULL AS BIGINT) AS iteration, 0 AS is_step
  FROM sync_spans
  WHERE iteration IS NULL
),
placed AS (
  SELECT run_no, rank, lifetime, group_no, at_ns, iteration
  FROM sync_spans
  WHERE iteration IS NOT NULL
  UNION ALL
  -- A lifetime's iterations rise with time: the latest step so far is the enclosing one.
  -- A lifetime is one process, of one run and rank: the partition needs neither.
  SELECT run_no, rank, lifetime, group_no, at_ns,
    CASE WHEN at_ns < step_end_ns THEN step_iteration END AS iteration
  FROM (
    SELECT *,
      MAX(CASE WHEN is_step = 1 THEN iteration END) OVER so_far AS step_iteration,
      MAX(end_ns) OVER so_far AS step_end_ns
    FROM timeline
    WINDOW so_far AS (PARTITION BY lifetime ORDER BY at_ns, is_step DESC)
  ) AS t
  WHERE is_step = 0
),
arrived AS (
  SELECT run_no, rank, group_no, iteration, lifetime, MIN(at_ns) AS arrival_ns
  FROM placed
  WHERE iteration IS NOT NULL
  GROUP BY run_no, rank, group_no, iteration, lifetime
),
latest AS (
  SELECT run_no, rank, group_no, iteration, arrival_ns
  FROM (
    SELECT *, ROW_NUMBER() OVER (
      PARTITION BY run_no, rank, group_no, iteration ORDER BY arrival_ns DESC
    ) AS execution
    FROM arrived
  ) AS a
  WHERE execution = 1
),
points AS (
  SELECT run_no, group_no, iteration, {percentile(arrival_ns, 0.5)} AS median_ns,
    MAX(arrival_ns) AS last_ns
  FROM latest
  GROUP BY run_no, group_no, iteration
  HAVING COUNT(*) > 1
),
late AS (
  SELECT l.run_no, l.rank, l.group_no, l.iteration, l.arrival_ns - p.median_ns AS lateness_ns,
    l.arrival_ns = p.last_ns AND l.arrival_ns > p.median_ns AS last
  FROM latest l
  JOIN points p
    ON p.run_no = l.run_no AND p.group_no = l.group_no AND p.iteration = l.iteration
),
typical AS (
  SELECT run_no, group_no, {percentile(duration_ns, 0.5)} AS duration_ns
  FROM sync_spans
  GROUP BY run_no, group_no
),
per_rank AS (
  SELECT run_no, group_no, rank, COUNT(*) AS iterations,
    SUM(CASE WHEN last THEN 1 ELSE 0 END) AS times_last,
    {percentile(lateness_ns, 0.5)} AS median_lateness_ns,
    MAX(lateness_ns) AS max_lateness_ns
  FROM late
  GROUP BY run_no, group_no, rank
)
SELECT
  u.run_id,
  g.span_group,
  r.rank,
  coalesce(n.node, '') AS node,
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
JOIN typical t ON t.run_no = r.run_no AND t.group_no = r.group_no
JOIN runs u ON u.run_no = r.run_no
JOIN sync_groups g ON g.group_no = r.group_no
JOIN nodes n ON n.run_no = r.run_no AND n.rank = r.rank
ORDER BY score, r.times_last DESC, u.run_id, g.span_group, r.rank
