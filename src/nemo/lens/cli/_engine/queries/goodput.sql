-- Goodput: every nanosecond of each rank, from its first span's start to its last span's
-- end, to one bucket (docs/goodput.md). Integer nanoseconds throughout, so the buckets
-- add up to the wall time exactly. Reads only the spans and span_groups views.
WITH timed AS (
  SELECT run_id, rank, lifetime, span_group, span_category, iteration, truncated, start_ns,
         CASE WHEN end_ns < start_ns THEN start_ns ELSE end_ns END AS end_ns
  FROM spans
),
-- A span feeds its group's bucket when its category (its own, else its group's) is goodput.
bucketed AS (
  SELECT t.run_id, t.rank, t.lifetime, t.iteration, t.truncated, t.start_ns, t.end_ns,
         g.bucket
  FROM timed t JOIN span_groups g ON g.span_group = t.span_group
  WHERE g.bucket IS NOT NULL AND g.bucket <> ''
    AND coalesce(t.span_category, g.category) = 'goodput'
),
-- The last execution of an iteration is the one that counts.
last_runs AS (
  SELECT run_id, rank, iteration, max(start_ns) AS last_start
  FROM bucketed WHERE bucket = 'productive' AND iteration IS NOT NULL
  GROUP BY run_id, rank, iteration
),
judged AS (
  SELECT b.run_id, b.rank, b.start_ns, b.end_ns,
         CASE WHEN b.bucket = 'productive'
                   AND (b.truncated OR (b.iteration IS NOT NULL AND l.last_start > b.start_ns))
              THEN 'wasted_progress' ELSE b.bucket END AS bucket
  FROM bucketed b
  LEFT JOIN last_runs l
    ON l.run_id = b.run_id AND l.rank IS NOT DISTINCT FROM b.rank AND l.iteration = b.iteration
),
-- Cut each rank's time at every start and end; each piece goes to the innermost span
-- covering it: the one that started last (the shortest, on a tie).
points AS (
  SELECT DISTINCT run_id, rank, start_ns AS at_ns FROM judged
  UNION
  SELECT DISTINCT run_id, rank, end_ns AS at_ns FROM judged
),
pieces AS (
  SELECT run_id, rank, at_ns AS left_ns,
         LEAD(at_ns) OVER (PARTITION BY run_id, rank ORDER BY at_ns) AS right_ns
  FROM points
),
covered AS (
  SELECT p.run_id, p.rank, p.left_ns, p.right_ns, j.bucket,
         ROW_NUMBER() OVER (PARTITION BY p.run_id, p.rank, p.left_ns
                            ORDER BY j.start_ns DESC, j.end_ns ASC, j.bucket) AS nth
  FROM pieces p
  JOIN judged j
    ON j.run_id = p.run_id AND j.rank IS NOT DISTINCT FROM p.rank
   AND j.start_ns <= p.left_ns AND j.end_ns > p.left_ns
  WHERE p.right_ns IS NOT NULL
),
sums AS (
  SELECT run_id, rank,
         sum(CASE WHEN bucket = 'productive' THEN right_ns - left_ns ELSE 0 END) AS productive,
         sum(CASE WHEN bucket = 'initialization' THEN right_ns - left_ns ELSE 0 END)
           AS initialization,
         sum(CASE WHEN bucket = 'checkpoint_save' THEN right_ns - left_ns ELSE 0 END)
           AS checkpoint_save,
         sum(CASE WHEN bucket = 'evaluation' THEN right_ns - left_ns ELSE 0 END) AS evaluation,
         sum(CASE WHEN bucket = 'wasted_progress' THEN right_ns - left_ns ELSE 0 END)
           AS wasted_progress,
         sum(right_ns - left_ns) AS bucketed_total
  FROM covered WHERE nth = 1
  GROUP BY run_id, rank
),
-- Each lifetime's extent; restart is the time between one's end and the next's start,
-- live the time some lifetime of the rank ran.
lives AS (
  SELECT run_id, rank, lifetime, min(start_ns) AS start_ns, max(end_ns) AS end_ns
  FROM timed GROUP BY run_id, rank, lifetime
),
ordered_lives AS (
  SELECT run_id, rank, start_ns, end_ns,
         max(end_ns) OVER (PARTITION BY run_id, rank ORDER BY start_ns, end_ns
                           ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS before_ns
  FROM lives
),
ranks AS (
  SELECT run_id, rank, count(*) AS lifetimes, min(start_ns) AS start_ns,
         max(end_ns) AS end_ns,
         sum(CASE WHEN before_ns IS NOT NULL AND start_ns > before_ns
                  THEN start_ns - before_ns ELSE 0 END) AS restart,
         sum(CASE WHEN before_ns IS NULL THEN end_ns - start_ns
                  WHEN end_ns > before_ns
                  THEN end_ns - CASE WHEN start_ns > before_ns THEN start_ns ELSE before_ns END
                  ELSE 0 END) AS live
  FROM ordered_lives GROUP BY run_id, rank
),
figures AS (
  SELECT r.run_id, r.rank, r.lifetimes, r.start_ns, r.end_ns,
         coalesce(s.productive, 0) AS productive,
         coalesce(s.initialization, 0) AS initialization,
         coalesce(s.checkpoint_save, 0) AS checkpoint_save,
         coalesce(s.evaluation, 0) AS evaluation,
         coalesce(s.wasted_progress, 0) AS wasted_progress,
         r.restart,
         r.live - coalesce(s.bucketed_total, 0) AS unaccounted
  FROM ranks r
  LEFT JOIN sums s ON s.run_id = r.run_id AND s.rank IS NOT DISTINCT FROM r.rank
),
-- The run's figures are its slowest rank's (least productive, then longest) among the
-- ranks that executed a step, or among all when none did.
chosen AS (
  SELECT run_id, rank,
         ROW_NUMBER() OVER (
           PARTITION BY run_id
           ORDER BY CASE WHEN productive + wasted_progress > 0 THEN 0 ELSE 1 END,
                    productive, end_ns - start_ns DESC,
                    CASE WHEN rank IS NULL THEN 1 ELSE 0 END, rank) AS nth
  FROM figures
),
runs AS (
  SELECT run_id, min(start_ns) AS run_start_ns, max(end_ns) AS run_end_ns
  FROM figures GROUP BY run_id
)
SELECT f.run_id, f.rank, f.lifetimes, f.start_ns, f.end_ns,
       f.productive, f.initialization, f.checkpoint_save, f.evaluation, f.wasted_progress,
       f.restart, f.unaccounted,
       u.run_start_ns, u.run_end_ns,
       CASE WHEN c.nth = 1 THEN true ELSE false END AS bounding
FROM figures f
JOIN runs u ON u.run_id = f.run_id
JOIN chosen c ON c.run_id = f.run_id AND c.rank IS NOT DISTINCT FROM f.rank
ORDER BY f.run_id, CASE WHEN f.rank IS NULL THEN 1 ELSE 0 END, f.rank
