-- Stragglers by arrival (docs/stragglers.md): per run, sync group (span_groups.sync) and
-- rank, how late the rank reached the group's spans against the median rank, iteration by
-- iteration, and how often it was the last to arrive. A rank's arrival at an iteration is
-- the start of its first span of the group there, in the last lifetime that executed it (a
-- re-executed iteration counts once); a span without an iteration of its own takes its
-- rank's step that contains its start. Iterations fewer than two ranks reached are left out.
-- The last rank of an iteration arrived after the median (ranks tied: each). The score
-- is the group's time per iteration (the median rank's median) over itself plus the
-- rank's median lateness (1: on time; towards 0: the others wait on it); persistent: last
-- at most iterations.
WITH sync_groups AS (
  SELECT span_group, ROW_NUMBER() OVER (ORDER BY span_group) AS group_no
  FROM span_groups
  WHERE sync
),
runs AS (
  -- Runs and groups by number, as lifetimes below. Times as offsets from the run's first
  -- span: doubles (the median) hold them exactly, where nanoseconds since 1970 would lose
  -- their last few hundred.
  SELECT run_id, MIN(start_ns) AS base_ns, ROW_NUMBER() OVER (ORDER BY run_id) AS run_no
  FROM spans
  GROUP BY run_id
),
lifetime_ranks AS (
  -- Lifetimes by number (per run and rank: a trace without lifetime ids names one by its
  -- file, host and pid): DuckDB sorts and groups on integers several times faster.
  SELECT l.run_id, r.run_no, l.rank, l.lifetime, l.resource, r.base_ns,
    ROW_NUMBER() OVER (ORDER BY l.run_id, l.rank, l.lifetime) AS lifetime_no
  FROM (
    SELECT s.run_id, s.rank, s.lifetime, MIN(s.resource) AS resource
    FROM spans s JOIN sync_groups g ON g.span_group = s.span_group
    WHERE s.rank IS NOT NULL
    GROUP BY s.run_id, s.rank, s.lifetime
  ) AS l
  JOIN runs r ON r.run_id = l.run_id
),
nodes AS (
  -- A lifetime has one resource: its host.name is read once, not once a span.
  SELECT run_no, rank, MAX({json_text(resource, host.name)}) AS node
  FROM lifetime_ranks
  GROUP BY run_no, rank
),
sync_spans AS {not_materialized()} (
  SELECT t.run_no, t.rank, t.lifetime_no, g.group_no, s.start_ns - t.base_ns AS at_ns,
    s.duration_ns, s.iteration
  FROM spans s
  JOIN sync_groups g ON g.span_group = s.span_group
  JOIN lifetime_ranks t ON t.run_id = s.run_id AND t.rank = s.rank AND t.lifetime = s.lifetime
),
timeline AS (
  -- The sync spans without an iteration, and the steps that give them theirs, in chunks
  -- of 2^40 ns (18 minutes) of their lifetime: DuckDB holds a window's partition in
  -- memory. A step is also in the chunk it ends in (its second copy), for the spans there
  -- that it encloses.
  SELECT lifetime_no, CAST(NULL AS BIGINT) AS run_no, CAST(NULL AS BIGINT) AS rank,
    CAST(NULL AS BIGINT) AS group_no, at_ns, end_ns, CAST(NULL AS BIGINT) AS duration_ns,
    iteration, 1 AS is_step, CASE WHEN copy_no = 0 THEN start_chunk ELSE end_chunk END AS chunk
  FROM (
    SELECT t.lifetime_no, s.start_ns - t.base_ns AS at_ns, s.end_ns - t.base_ns AS end_ns,
      s.iteration, {intdiv(s.start_ns - t.base_ns, 1099511627776)} AS start_chunk,
      {intdiv(s.end_ns - t.base_ns, 1099511627776)} AS end_chunk
    FROM steps s
    JOIN lifetime_ranks t
      ON t.run_id = s.run_id AND t.rank = s.rank AND t.lifetime = s.lifetime
    WHERE s.iteration IS NOT NULL
  ) AS s
  CROSS JOIN (VALUES (0), (1)) AS copies (copy_no)
  WHERE copy_no = 0 OR end_chunk > start_chunk
  UNION ALL
  SELECT lifetime_no, run_no, rank, group_no, at_ns, CAST(NULL AS BIGINT), duration_ns,
    iteration, 0, {intdiv(at_ns, 1099511627776)}
  FROM sync_spans
  WHERE iteration IS NULL
),
placed AS (
  SELECT * FROM sync_spans WHERE iteration IS NOT NULL
  UNION ALL
  -- A lifetime's iterations rise with time: the latest step so far is the enclosing one.
  SELECT run_no, rank, lifetime_no, group_no, at_ns, duration_ns,
    CASE WHEN at_ns < step_end_ns THEN step_iteration END AS iteration
  FROM (
    SELECT *,
      MAX(CASE WHEN is_step = 1 THEN iteration END) OVER so_far AS step_iteration,
      MAX(end_ns) OVER so_far AS step_end_ns
    FROM timeline
    WINDOW so_far AS (
      PARTITION BY lifetime_no, chunk ORDER BY at_ns, is_step DESC
      ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW
    )
  ) AS t
  WHERE is_step = 0
),
arrived AS (
  -- A sum of durations fits 64 bits: BIGINT keeps the steps below off 128-bit arithmetic
  -- (at 10^6 spans, -0.05 s of CPU).
  SELECT run_no, rank, group_no, iteration, lifetime_no, MIN(at_ns) AS arrival_ns,
    CAST(SUM(duration_ns) AS BIGINT) AS busy_ns
  FROM placed
  WHERE iteration IS NOT NULL
  GROUP BY run_no, rank, group_no, iteration, lifetime_no
),
latest AS (
  -- A rank's lifetimes follow one another: the last to execute the iteration arrived last.
  SELECT run_no, rank, group_no, iteration, MAX(arrival_ns) AS arrival_ns,
    max_by(busy_ns, arrival_ns) AS busy_ns
  FROM arrived
  GROUP BY run_no, rank, group_no, iteration
),
late AS (
  SELECT run_no, rank, group_no, busy_ns, arrival_ns - median_ns AS lateness_ns,
    arrival_ns = last_ns AND arrival_ns > median_ns AS last
  FROM (
    SELECT *, {percentile(arrival_ns, 0.5)} OVER point AS median_ns,
      MAX(arrival_ns) OVER point AS last_ns, COUNT(*) OVER point AS ranks
    FROM latest
    WINDOW point AS (PARTITION BY run_no, group_no, iteration)
  ) AS l
  WHERE ranks > 1
),
per_rank AS (
  SELECT run_no, group_no, rank, COUNT(*) AS iterations,
    SUM(CASE WHEN last THEN 1 ELSE 0 END) AS times_last,
    {percentile(lateness_ns, 0.5)} AS median_lateness_ns,
    MAX(lateness_ns) AS max_lateness_ns,
    {percentile(busy_ns, 0.5)} AS busy_ns
  FROM late
  GROUP BY run_no, group_no, rank
),
scored AS (
  -- The group's time scale: the median rank's median time in it per iteration.
  SELECT *, {percentile(busy_ns, 0.5)} OVER (PARTITION BY run_no, group_no) AS duration_ns
  FROM per_rank
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
         ELSE r.duration_ns / (r.duration_ns + r.median_lateness_ns) END, 4
  ) AS score,
  CASE WHEN 2 * r.times_last > r.iterations THEN 'persistent'
       WHEN r.times_last > 0 THEN 'rotating' ELSE '' END AS pattern
FROM scored r
JOIN runs u ON u.run_no = r.run_no
JOIN sync_groups g ON g.group_no = r.group_no
JOIN nodes n ON n.run_no = r.run_no AND n.rank = r.rank
ORDER BY score, r.times_last DESC, u.run_id, g.span_group, r.rank
