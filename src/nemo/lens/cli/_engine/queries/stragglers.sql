-- The straggler of each iteration: of the ranks that executed it (each rank's last,
-- counted execution), the slowest, its step's duration, the median rank's, and the
-- lag between them. Iterations that fewer than two ranks executed have no straggler.
-- A tie for the slowest goes to the lowest rank. The worst lag first.
WITH counted AS (
  SELECT run_id, iteration, rank, duration_ns
  FROM steps
  WHERE NOT wasted AND iteration IS NOT NULL
),
ranked AS (
  SELECT run_id, iteration, rank, duration_ns,
    ROW_NUMBER() OVER (
      PARTITION BY run_id, iteration ORDER BY duration_ns DESC, rank
    ) AS place
  FROM counted
),
per_iteration AS (
  SELECT run_id, iteration, COUNT(*) AS ranks,
    {percentile(duration_ns, 0.5)} AS median_ns
  FROM counted
  GROUP BY run_id, iteration
  HAVING COUNT(*) > 1
)
SELECT
  r.run_id,
  r.iteration,
  r.rank AS slowest_rank,
  r.duration_ns AS slowest_ns,
  CAST(ROUND(p.median_ns) AS BIGINT) AS median_ns,
  r.duration_ns - CAST(ROUND(p.median_ns) AS BIGINT) AS lag_ns,
  p.ranks
FROM ranked r
JOIN per_iteration p
  ON p.run_id IS NOT DISTINCT FROM r.run_id AND p.iteration = r.iteration
WHERE r.place = 1
ORDER BY lag_ns DESC, r.run_id, r.iteration
