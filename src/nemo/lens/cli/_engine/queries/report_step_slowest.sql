-- Per process, at how many x (iterations, or step numbers) its counted step was the one
-- slowest of every process's (a tie counts for nobody).
WITH longest AS (
  SELECT x, max(duration_ns) AS duration_ns FROM report_steps WHERE NOT wasted GROUP BY x
),
at_longest AS (
  SELECT s.x, s.run_id, s.rank, s.service
  FROM report_steps s JOIN longest l ON l.x = s.x AND l.duration_ns = s.duration_ns
  WHERE NOT s.wasted
  GROUP BY s.x, s.run_id, s.rank, s.service
),
alone AS (
  SELECT x, min(run_id) AS run_id, min(rank) AS rank, min(service) AS service
  FROM at_longest GROUP BY x HAVING count(*) = 1
)
SELECT run_id, rank, service, count(*) FROM alone GROUP BY run_id, rank, service
