-- The counted steps of the processes with more than ? steps, in bins of `size` consecutive
-- steps in (x, duration) order; `size` is the least that keeps a process within ? bins, as
-- ceil(n / limit) in floating point.
WITH counted AS (
  SELECT run_id, rank, service, x, duration_ns,
         row_number() OVER (PARTITION BY run_id, rank, service ORDER BY x, duration_ns) - 1
           AS position,
         count(*) OVER (PARTITION BY run_id, rank, service) AS n
  FROM report_steps WHERE steps > ? AND NOT wasted
),
sized AS (
  SELECT *, CAST(ceil(CAST(n AS DOUBLE) / ?) AS BIGINT) AS size FROM counted
)
SELECT run_id, rank, service, CAST(floor(position / size) AS BIGINT) AS bin, min(x), max(x),
       sum(duration_ns), count(*), max(duration_ns), size
FROM sized
GROUP BY run_id, rank, service, CAST(floor(position / size) AS BIGINT), size
ORDER BY run_id, rank, service, bin
