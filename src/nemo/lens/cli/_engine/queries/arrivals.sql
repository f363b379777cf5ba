-- Stragglers by arrival (docs/stragglers.md): per run, sync group (span_groups.sync) and
-- rank, how late the rank reached the group's spans against the median rank, iteration by
-- iteration, and how often it was the last to arrive. A rank's arrival at an iteration is
-- the start of its first span of the group there, in the last lifetime that executed it (a
-- re-executed iteration counts once); a span without an iteration of its own takes its
-- lifetime's step that contains its start. Iterations fewer than two ranks reached are left
-- out.
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
  -- Runs and groups by number: DuckDB sorts and groups on integers several times faster.
  -- Times as offsets from the run's first span: doubles (the median) hold them exactly,
  -- where nanoseconds since 1970 would lose their last few hundred.
  SELECT run_id, MIN(start_ns) AS base_ns, ROW_NUMBER() OVER (ORDER BY run_id) AS run_no
  FROM spans
  GROUP BY run_id
),
lifetimes AS (
  -- Lifetimes by number: the iterations are grouped per lifetime on an integer, not a
  -- string. Per run and rank: a trace written without lifetime ids names a lifetime by its
  -- file and host, which several ranks may share.
  SELECT l.run_id, l.rank, l.lifetime, r.run_no, l.resource,
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
  FROM lifetimes
  GROUP BY run_no, rank
),
timed_steps AS (
  SELECT t.lifetime_no, s.iteration, s.start_ns - r.base_ns AS start_at,
    s.end_ns - r.base_ns AS end_at
  FROM steps s
  JOIN runs r ON r.run_id = s.run_id
  JOIN lifetimes t
    ON t.run_id = s.run_id AND t.rank = s.rank AND t.lifetime = s.lifetime
  WHERE s.iteration IS NOT NULL AND s.end_ns > s.start_ns
),
widths AS (
  -- The enclosing step is found by an equi-join on time buckets, not a window over the
  -- lifetime (a sort, several times slower): per lifetime, buckets of a power of two at
  -- least its mean step, so a step lies in about two buckets and a bucket holds few steps.
  SELECT lifetime_no,
    CAST(POWER(2, CEIL(LOG2(GREATEST(AVG(end_at - start_at), 1)))) AS BIGINT) AS width
  FROM timed_steps
  GROUP BY lifetime_no
),
step_buckets AS (
  SELECT lifetime_no, iteration, start_at, end_at,
    {each(first_bucket, last_bucket)} AS bucket
  FROM (
    SELECT s.*, {intdiv(s.start_at, w.width)} AS first_bucket,
      {intdiv(s.end_at - 1, w.width)} AS last_bucket
    FROM timed_steps s JOIN widths w ON w.lifetime_no = s.lifetime_no
  ) AS s
),
unplaced AS (
  -- The bucket is computed here: as a join condition, DuckDB would match on the lifetime
  -- alone and compare every pair.
  SELECT t.lifetime_no, g.group_no, s.start_ns - r.base_ns AS at_ns, s.duration_ns,
    {intdiv(s.start_ns - r.base_ns, w.width)} AS bucket
  FROM spans s
  JOIN sync_groups g ON g.span_group = s.span_group
  JOIN runs r ON r.run_id = s.run_id
  JOIN lifetimes t
    ON t.run_id = s.run_id AND t.rank = s.rank AND t.lifetime = s.lifetime
  JOIN widths w ON w.lifetime_no = t.lifetime_no
  WHERE s.rank IS NOT NULL AND s.iteration IS NULL
),
placed AS (
  SELECT t.lifetime_no, g.group_no, s.start_ns - r.base_ns AS at_ns, s.duration_ns,
    s.iteration
  FROM spans s
  JOIN sync_groups g ON g.span_group = s.span_group
  JOIN runs r ON r.run_id = s.run_id
  JOIN lifetimes t
    ON t.run_id = s.run_id AND t.rank = s.rank AND t.lifetime = s.lifetime
  WHERE s.rank IS NOT NULL AND s.iteration IS NOT NULL
  UNION ALL
  SELECT u.lifetime_no, u.group_no, u.at_ns, u.duration_ns, b.iteration
  FROM unplaced u
  JOIN step_buckets b ON b.lifetime_no = u.lifetime_no AND b.bucket = u.bucket
  WHERE b.start_at <= u.at_ns AND u.at_ns < b.end_at
),
arrived AS (
  SELECT lifetime_no, group_no, iteration, MIN(at_ns) AS arrival_ns, SUM(duration_ns) AS busy_ns
  FROM placed
  GROUP BY lifetime_no, group_no, iteration
),
latest AS (
  SELECT run_no, rank, group_no, iteration, arrival_ns, busy_ns
  FROM (
    SELECT t.run_no, t.rank, a.*, ROW_NUMBER() OVER (
      PARTITION BY t.run_no, t.rank, a.group_no, a.iteration ORDER BY a.arrival_ns DESC
    ) AS execution
    FROM arrived a JOIN lifetimes t ON t.lifetime_no = a.lifetime_no
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
  SELECT l.run_no, l.rank, l.group_no, l.busy_ns, l.arrival_ns - p.median_ns AS lateness_ns,
    l.arrival_ns = p.last_ns AND l.arrival_ns > p.median_ns AS last
  FROM latest l
  JOIN points p
    ON p.run_no = l.run_no AND p.group_no = l.group_no AND p.iteration = l.iteration
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
