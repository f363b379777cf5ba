-- Goodput: every nanosecond of each rank, from its first span's start to its last span's
-- end, to one bucket (docs/goodput.md). Integer nanoseconds throughout, so the buckets
-- add up to the wall time exactly. Reads only the spans and span_groups views.
-- From the bucketed spans to the sums a rank is one integer, proc: every window
-- partitions and every join matches on it, and one integer sorts and hashes faster than
-- a run's name and a rank (at 10^6 spans, 1.0 s -> 0.65 s).
-- Each lifetime's extent, its first step span's start (finished or not), its step spans
-- and how many carry no iteration (for the notes): one pass over the spans, and the
-- ranks are numbered from it. A step span is one that feeds the productive bucket.
WITH lives AS (
  SELECT run_id, rank, lifetime, min(start_ns) AS start_ns,
         max(CASE WHEN end_ns < start_ns THEN start_ns ELSE end_ns END) AS end_ns,
         min(CASE WHEN step THEN start_ns END) AS first_step_ns,
         count(CASE WHEN step THEN 1 END) AS step_spans,
         count(CASE WHEN step AND iteration IS NULL THEN 1 END) AS no_iteration
  FROM (
    SELECT s.run_id, s.rank, s.lifetime, s.start_ns, s.end_ns, s.iteration,
           coalesce(g.bucket = 'productive'
                    AND coalesce(s.span_category, g.category) = 'goodput', false) AS step
    FROM spans s LEFT JOIN span_groups g ON g.span_group = s.span_group
  ) x
  GROUP BY run_id, rank, lifetime
),
procs AS (
  SELECT run_id, rank, ROW_NUMBER() OVER (ORDER BY run_id, rank) AS proc
  FROM (SELECT DISTINCT run_id, rank FROM lives) x
),
-- A span feeds its group's bucket when its category (its own, else its group's) is goodput.
bucketed AS (
  SELECT p.proc, s.iteration, s.truncated, s.start_ns,
         CASE WHEN s.end_ns < s.start_ns THEN s.start_ns ELSE s.end_ns END AS end_ns, g.bucket
  FROM spans s
  JOIN span_groups g ON g.span_group = s.span_group
  JOIN procs p ON p.run_id = s.run_id AND p.rank IS NOT DISTINCT FROM s.rank
  WHERE g.bucket IS NOT NULL AND g.bucket <> ''
    AND coalesce(s.span_category, g.category) = 'goodput'
),
-- Cut each rank's time at every start and end; each piece goes to the innermost span
-- covering it: the one that started last (the shortest, on a tie). In start order, a
-- span that starts after every earlier one ended and ends before the next one starts
-- overlaps none: it owns its whole extent (a training run's steps, checkpoints and
-- evaluations, one after another). Spans that start together are never alone, in
-- whichever order they come. Only the rest, where spans overlap, go through the sweep
-- below (at 10^7 spans, where no goodput span overlaps another, 15 s -> 2.1 s).
-- Zero-length spans cover nothing; they stay in the window (for the iterations below),
-- where one can only send a span it lies in to the sweep, which gives the same pieces.
-- Whether a span is alone, and which steps ran an iteration again (below), take running
-- maxima in start order: of the ends before each span, of the steps' iterations before
-- it. On a rank whose spans each start after the one before ended and whose steps'
-- iterations rise (no overlap, no restart), each maximum is the previous span's (step's)
-- value and no step ran again; only the other ranks are ordered a second time, for the
-- maxima (at 10^6 spans, -0.04 s of CPU).
neighbours AS (
  SELECT proc, iteration, truncated, start_ns, end_ns, bucket,
         LAG(end_ns) OVER (PARTITION BY proc ORDER BY start_ns) AS before_end_ns,
         LEAD(start_ns) OVER (PARTITION BY proc ORDER BY start_ns) AS next_start_ns,
         {lag_of_nonnull(CASE WHEN bucket = 'productive' THEN iteration END)}
           OVER (PARTITION BY proc ORDER BY start_ns) AS step_iteration_before
  FROM bucketed
),
irregular_procs AS (
  SELECT DISTINCT proc FROM neighbours
  WHERE start_ns < before_end_ns OR (bucket = 'productive' AND iteration <= step_iteration_before)
),
placed AS (
  SELECT n.proc, n.iteration, n.truncated, n.start_ns, n.end_ns, n.bucket,
         n.before_end_ns AS reach_ns, n.next_start_ns, CAST(NULL AS BIGINT) AS iteration_before
  FROM neighbours n LEFT JOIN irregular_procs t ON t.proc = n.proc
  WHERE t.proc IS NULL
  UNION ALL
  SELECT proc, iteration, truncated, start_ns, end_ns, bucket,
         max(end_ns) OVER (PARTITION BY proc ORDER BY start_ns
                           ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS reach_ns,
         LEAD(start_ns) OVER (PARTITION BY proc ORDER BY start_ns) AS next_start_ns,
         max(CASE WHEN bucket = 'productive' THEN iteration END)
           OVER (PARTITION BY proc ORDER BY start_ns
                 ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS iteration_before
  FROM neighbours WHERE proc IN (SELECT proc FROM irregular_procs)
),
-- The last execution of an iteration is the one that counts. Every execution of an
-- iteration but its first follows a step of that iteration or a later one (after a
-- restart), so its last start is the last start of those steps: iterations that ran once
-- are never grouped (at 10^6 spans, -0.04 s).
last_runs AS (
  SELECT proc, iteration, max(start_ns) AS last_start
  FROM placed WHERE bucket = 'productive' AND iteration <= iteration_before
  GROUP BY proc, iteration
),
ordered AS (
  SELECT p.proc, p.start_ns, p.end_ns,
         CASE WHEN p.bucket = 'productive' AND (p.truncated OR l.last_start > p.start_ns)
              THEN 'wasted_progress' ELSE p.bucket END AS bucket,
         CASE WHEN (p.reach_ns IS NULL OR p.start_ns >= p.reach_ns)
                   AND (p.next_start_ns IS NULL OR p.end_ns <= p.next_start_ns)
              THEN true ELSE false END AS alone
  FROM placed p
  LEFT JOIN last_runs l ON l.proc = p.proc AND l.iteration = p.iteration
  WHERE p.end_ns > p.start_ns
),
-- The sweep, over the spans that overlap another. In start order (the longer first, so
-- a span follows every span that encloses it; the bucket breaks a tie), a span's depth is
-- how many spans are open just after its start; while the spans nest, the innermost span
-- covering a piece is the last one to start, before the piece, at the piece's depth. A
-- cluster (spans each starting before all earlier ones ended) where some span outlives
-- the span it lies in does not nest: its pieces take the covering span that started
-- last from a join of the cluster's pieces with its spans. Leaving out the spans that
-- overlap none changes no other span's depth or cluster: such a span ends before any
-- later span starts, after every earlier one ended.
overlapping AS (
  SELECT proc, start_ns, end_ns, bucket,
         ROW_NUMBER() OVER (PARTITION BY proc
                            ORDER BY start_ns, end_ns DESC, bucket DESC) AS seq,
         max(end_ns) OVER (PARTITION BY proc ORDER BY start_ns, end_ns DESC, bucket DESC
                           ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS reach_ns
  FROM ordered WHERE NOT alone
),
clustered AS (
  SELECT proc, start_ns, end_ns, bucket, seq,
         sum(CASE WHEN reach_ns IS NULL OR start_ns >= reach_ns THEN 1 ELSE 0 END)
           OVER (PARTITION BY proc ORDER BY seq
                 ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS cluster
  FROM overlapping
),
-- Each span gives two edges, its start (carrying the span) and its end. Here and below a
-- row that stands for two is crossed with a two-row VALUES, not read twice in a UNION:
-- Spark copies a CTE into every place that names it, and the copies made its planning of
-- this query take 16 s and over 768 MB of heap (docs/sql.md has the figures since).
edges AS (
  SELECT c.proc, CASE WHEN e.opens = 1 THEN c.start_ns ELSE c.end_ns END AS at_ns, e.opens,
         CASE WHEN e.opens = 1 THEN c.seq END AS seq, c.end_ns, c.bucket, c.cluster
  FROM clustered c CROSS JOIN (VALUES (1), (0)) AS e(opens)
),
-- One pass over the edges in time order (a span's end before a span's start at the same
-- instant) gives both each span's depth and the pieces between consecutive instants.
-- depth: the spans before it in order, itself included, less those ended by its start.
-- A piece runs from an edge to the next; of the edges at one instant only the last
-- starts a piece that is not empty, with the count of spans open after that instant.
swept AS (
  SELECT proc, seq, opens, at_ns, end_ns, bucket, cluster,
         seq - sum(1 - opens) OVER (PARTITION BY proc ORDER BY at_ns, opens
                                    ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS depth,
         LEAD(at_ns) OVER (PARTITION BY proc ORDER BY at_ns, opens) AS right_ns,
         sum(2 * opens - 1) OVER (PARTITION BY proc ORDER BY at_ns, opens
                                  ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS open_after
  FROM edges
),
deep AS (
  SELECT proc, at_ns AS start_ns, end_ns, bucket, seq, cluster, depth FROM swept WHERE opens = 1
),
-- Each span's enclosing span, were the spans nested: the last one before it a level up.
enclosing AS (
  SELECT proc, seq, end_ns, depth, cluster, outer_seq FROM (
    SELECT proc, seq, end_ns, depth, cluster, probe,
           max(CASE WHEN probe = 0 THEN seq END)
             OVER (PARTITION BY proc, level ORDER BY seq
                   ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS outer_seq
    FROM (
      SELECT d.proc, d.seq, d.end_ns, d.depth, d.cluster, d.depth + 1 - p.probe AS level, p.probe
      FROM deep d CROSS JOIN (VALUES (0), (1)) AS p(probe)
    ) l
  ) e WHERE probe = 1 AND depth > 1
),
tangled AS (
  SELECT DISTINCT e.proc, e.cluster
  FROM enclosing e
  LEFT JOIN deep o
    ON o.proc = e.proc AND o.seq = e.outer_seq
  WHERE o.seq IS NULL OR o.end_ns < e.end_ns
),
-- Each piece's owner: at the piece's depth, the last span to start before it. The probes
-- are the spans' starts (probe 0) and the pieces (probe 1: an edge that starts a piece
-- that is not empty, with spans open over it).
owned AS (
  SELECT proc, left_ns, right_ns, owner FROM (
    SELECT proc, probe, left_ns, right_ns,
           max(CASE WHEN probe = 0 THEN seq END)
             OVER (PARTITION BY proc, depth ORDER BY at_ns, probe
                   ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS owner
    FROM (
      SELECT s.proc, CASE WHEN p.probe = 0 THEN s.depth ELSE s.open_after END AS depth,
             s.at_ns, p.probe, CASE WHEN p.probe = 0 THEN s.seq END AS seq,
             CASE WHEN p.probe = 1 THEN s.at_ns END AS left_ns,
             CASE WHEN p.probe = 1 THEN s.right_ns END AS right_ns
      FROM swept s CROSS JOIN (VALUES (0), (1)) AS p(probe)
      WHERE (p.probe = 0 AND s.opens = 1)
         OR (p.probe = 1 AND s.right_ns > s.at_ns AND s.open_after > 0)
    ) l
  ) o WHERE probe = 1
),
assigned AS (
  SELECT o.proc, o.left_ns, o.right_ns, d.bucket, d.cluster, d.seq AS owner,
         d.start_ns AS owner_start_ns,
         CASE WHEN t.cluster IS NULL THEN false ELSE true END AS tangled
  FROM owned o
  JOIN deep d ON d.proc = o.proc AND d.seq = o.owner
  LEFT JOIN tangled t
    ON t.proc = o.proc AND t.cluster = d.cluster
),
-- The swept pieces with their bucket and the span that owns them (by its seq in the
-- sweep, and its start): a step's productive time is its pieces' sum. A piece of a tangled
-- cluster takes the covering span of its cluster that started last (the shortest, on a
-- tie); any other piece has one row here, its owner's.
swept_pieces AS (
  SELECT proc, left_ns, right_ns, bucket, owner, owner_start_ns FROM (
    SELECT a.proc, a.left_ns, a.right_ns, coalesce(d.bucket, a.bucket) AS bucket,
           coalesce(d.seq, a.owner) AS owner,
           coalesce(d.start_ns, a.owner_start_ns) AS owner_start_ns,
           ROW_NUMBER() OVER (PARTITION BY a.proc, a.left_ns
                              ORDER BY d.start_ns DESC, d.end_ns ASC, d.bucket) AS nth
    FROM assigned a
    LEFT JOIN deep d
      ON a.tangled AND d.proc = a.proc AND d.cluster = a.cluster
     AND d.start_ns <= a.left_ns AND d.end_ns > a.left_ns
    WHERE NOT a.tangled OR d.seq IS NOT NULL
  ) u WHERE nth = 1
),
-- Every piece with its bucket: the spans that overlap none, whole, and the swept pieces.
covered AS (
  SELECT proc, start_ns AS left_ns, end_ns AS right_ns, bucket FROM ordered WHERE alone
  UNION ALL
  SELECT proc, left_ns, right_ns, bucket FROM swept_pieces
),
-- Anomalous steps (Google's rule): a step's time is its productive time (a checkpoint or
-- data loading inside it is theirs, not the step's); the ideal step time is the mean of
-- the counted steps no slower than median + 3 * MAD (unscaled); the anomalous steps'
-- excess over it, in whole nanoseconds, is carved out of productive time.
-- A step that overlaps no other span is its own step time, whole; only the swept pieces
-- are summed per step (at 10^6 spans, -0.07 s). A step's time fits 64 bits: BIGINT keeps
-- the windows below off 128-bit arithmetic.
step_times AS (
  SELECT proc, start_ns, end_ns - start_ns AS ns
  FROM ordered WHERE alone AND bucket = 'productive'
  UNION ALL
  SELECT proc, owner_start_ns AS start_ns, CAST(sum(right_ns - left_ns) AS BIGINT) AS ns
  FROM swept_pieces WHERE bucket = 'productive'
  GROUP BY proc, owner, owner_start_ns
),
step_medians AS (
  SELECT proc, start_ns, ns,
         {percentile(ns, 0.5)} OVER (PARTITION BY proc) AS median_ns
  FROM step_times
),
step_normal AS (
  SELECT proc, start_ns, ns,
         CASE WHEN ns <= median_ns + 3 * {percentile(abs(ns - median_ns), 0.5)}
                                           OVER (PARTITION BY proc)
              THEN 1 ELSE 0 END AS normal
  FROM step_medians
),
-- The excess is anomalous_ns - floor(anomalous steps * normal_ns / normal_steps), split so
-- that no product overflows 64 bits. The median step is normal, so normal_steps >= 1.
step_sums AS (
  SELECT proc, count(*) AS steps, count(*) - sum(normal) AS anomalous_steps,
         CAST(sum(normal * ns) AS DOUBLE) / sum(normal) AS ideal_ns,
         sum((1 - normal) * ns)
           - (count(*) - sum(normal)) * {intdiv(sum(normal * ns), sum(normal))}
           - {intdiv((count(*) - sum(normal)) * (sum(normal * ns) % sum(normal)),
                     sum(normal))} AS excess_ns
  FROM step_normal GROUP BY proc
),
-- Step deviation: |step time - ideal| per counted step, newest first (back = 1); the
-- mean while fewer than 100 steps ran, then the p90 of the last 100, less (from 1,100
-- steps on) the median of the 1,000 before them. Only the newest 1,100 steps are ranked
-- past the window (a window with one function sorts faster than with four: -0.04 s
-- of CPU at 10^6 spans), and only the steps from a floor no later than the 1,100th
-- newest start are sorted for it: a prefix of the order, so each keeps its number
-- (at 10^6 spans, -0.015 s of wall time).
step_newest AS (
  SELECT proc, ns, back FROM (
    SELECT proc, ns,
           ROW_NUMBER() OVER (PARTITION BY proc ORDER BY start_ns DESC, ns DESC) AS back
    FROM (
      SELECT proc, start_ns, ns, {floor_of_largest(start_ns, 1100, proc)} AS floor_ns
      FROM step_normal
    ) f WHERE start_ns >= floor_ns
  ) n WHERE back <= 1100
),
step_figures AS (
  SELECT s.proc, s.steps, s.anomalous_steps, s.ideal_ns, s.excess_ns,
         CASE WHEN s.steps < 100 THEN avg(abs(n.ns - s.ideal_ns))
              WHEN s.steps < 1100
              THEN {percentile(CASE WHEN n.back <= 100 THEN abs(n.ns - s.ideal_ns) END, 0.9)}
              ELSE {percentile(CASE WHEN n.back <= 100 THEN abs(n.ns - s.ideal_ns) END, 0.9)}
                   - {percentile(CASE WHEN n.back > 100 THEN abs(n.ns - s.ideal_ns) END, 0.5)}
         END AS deviation_ns
  FROM step_sums s JOIN step_newest n ON n.proc = s.proc
  GROUP BY s.proc, s.steps, s.anomalous_steps, s.ideal_ns, s.excess_ns
),
-- A rank's lifetimes in order: restart is the time between one's end and the next's
-- start, live the time some lifetime of the rank ran.
ordered_lives AS (
  SELECT run_id, rank, lifetime, start_ns, end_ns, first_step_ns, step_spans, no_iteration,
         max(end_ns) OVER (PARTITION BY run_id, rank ORDER BY start_ns, end_ns
                           ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS before_ns
  FROM lives
),
ranks AS (
  SELECT run_id, rank, count(*) AS lifetimes, min(start_ns) AS start_ns,
         max(end_ns) AS end_ns, sum(step_spans) AS step_spans, sum(no_iteration) AS no_iteration,
         sum(CASE WHEN before_ns IS NOT NULL AND start_ns > before_ns
                  THEN start_ns - before_ns ELSE 0 END) AS restart,
         sum(CASE WHEN before_ns IS NULL THEN end_ns - start_ns
                  WHEN end_ns > before_ns
                  THEN end_ns - CASE WHEN start_ns > before_ns THEN start_ns ELSE before_ns END
                  ELSE 0 END) AS live
  FROM ordered_lives GROUP BY run_id, rank
),
-- Start-up: a lifetime's time before its first step (finished or not) that no bucketed
-- span covers; recovery when an earlier lifetime of the rank ended before it (a crash,
-- a preemption, a requeue), else start-up. A lifetime without a step has neither. The
-- window starts where every earlier lifetime ended, so overlapping lifetimes count once.
startup_windows AS (
  SELECT proc, kind, from_ns, to_ns,
         ROW_NUMBER() OVER (PARTITION BY proc ORDER BY from_ns) AS nth
  FROM (
    SELECT p.proc, o.first_step_ns AS to_ns,
           CASE WHEN o.before_ns IS NULL THEN 'startup' ELSE 'recovery' END AS kind,
           CASE WHEN o.before_ns > o.start_ns THEN o.before_ns ELSE o.start_ns END AS from_ns
    FROM ordered_lives o
    JOIN procs p ON p.run_id = o.run_id AND p.rank IS NOT DISTINCT FROM o.rank
  ) w WHERE to_ns > from_ns
),
-- The sums go by proc; figures names the rank again (one join per rank, not per piece).
-- Each piece meets every start-up window of its rank (a lifetime or two): the buckets
-- count it with the first window only, the windows each count their overlap with it.
sums AS (
  SELECT proc,
         sum(once * CASE WHEN bucket = 'productive' THEN right_ns - left_ns ELSE 0 END)
           AS productive,
         sum(once * CASE WHEN bucket = 'initialization' THEN right_ns - left_ns ELSE 0 END)
           AS initialization,
         sum(once * CASE WHEN bucket = 'checkpoint_save' THEN right_ns - left_ns ELSE 0 END)
           AS checkpoint_save,
         sum(once * CASE WHEN bucket = 'evaluation' THEN right_ns - left_ns ELSE 0 END)
           AS evaluation,
         sum(once * CASE WHEN bucket = 'data_loading' THEN right_ns - left_ns ELSE 0 END)
           AS data_loading,
         sum(once * CASE WHEN bucket = 'wasted_progress' THEN right_ns - left_ns ELSE 0 END)
           AS wasted_progress,
         sum(once * (right_ns - left_ns)) AS bucketed_total,
         sum(CASE WHEN kind = 'startup' THEN overlap_ns ELSE 0 END) AS startup_covered,
         sum(CASE WHEN kind = 'recovery' THEN overlap_ns ELSE 0 END) AS recovery_covered
  FROM (
    SELECT c.proc, c.bucket, c.left_ns, c.right_ns, w.kind,
           CASE WHEN w.nth IS NULL OR w.nth = 1 THEN 1 ELSE 0 END AS once,
           CASE WHEN c.left_ns < w.to_ns AND c.right_ns > w.from_ns
                THEN CASE WHEN c.right_ns < w.to_ns THEN c.right_ns ELSE w.to_ns END
                     - CASE WHEN c.left_ns > w.from_ns THEN c.left_ns ELSE w.from_ns END
                ELSE 0 END AS overlap_ns
    FROM covered c LEFT JOIN startup_windows w ON w.proc = c.proc
  ) j
  GROUP BY proc
),
startups AS (
  SELECT proc,
         sum(CASE WHEN kind = 'startup' THEN to_ns - from_ns ELSE 0 END) AS startup,
         sum(CASE WHEN kind = 'recovery' THEN to_ns - from_ns ELSE 0 END) AS recovery
  FROM startup_windows GROUP BY proc
),
figures AS (
  SELECT r.run_id, r.rank, r.lifetimes, r.start_ns, r.end_ns,
         coalesce(s.productive, 0) - coalesce(x.excess_ns, 0) AS productive,
         coalesce(s.initialization, 0) AS initialization,
         coalesce(s.checkpoint_save, 0) AS checkpoint_save,
         coalesce(s.evaluation, 0) AS evaluation,
         coalesce(s.wasted_progress, 0) AS wasted_progress,
         r.restart,
         r.live - coalesce(s.bucketed_total, 0)
           - coalesce(u.startup - s.startup_covered, 0)
           - coalesce(u.recovery - s.recovery_covered, 0) AS unaccounted,
         coalesce(s.data_loading, 0) AS data_loading,
         coalesce(u.startup - s.startup_covered, 0) AS startup,
         coalesce(u.recovery - s.recovery_covered, 0) AS recovery,
         coalesce(x.excess_ns, 0) AS anomalous_steps,
         coalesce(x.steps, 0) AS steps,
         coalesce(x.anomalous_steps, 0) AS anomalous_step_count,
         x.ideal_ns AS ideal_step_ns,
         x.deviation_ns AS step_deviation_ns,
         r.step_spans, r.no_iteration AS steps_without_iteration
  FROM ranks r
  JOIN procs p ON p.run_id = r.run_id AND p.rank IS NOT DISTINCT FROM r.rank
  LEFT JOIN sums s ON s.proc = p.proc
  LEFT JOIN startups u ON u.proc = p.proc
  LEFT JOIN step_figures x ON x.proc = p.proc
)
-- The run's figures are its slowest rank's (least productive, then longest) among the
-- ranks that executed a step, or among all when none did. Window functions over the
-- ranks, not joins, so that figures is named once.
SELECT run_id, rank, lifetimes, start_ns, end_ns,
       productive, initialization, checkpoint_save, evaluation, wasted_progress,
       restart, unaccounted,
       min(start_ns) OVER (PARTITION BY run_id) AS run_start_ns,
       max(end_ns) OVER (PARTITION BY run_id) AS run_end_ns,
       CASE WHEN ROW_NUMBER() OVER (
                   PARTITION BY run_id
                   ORDER BY CASE WHEN productive + wasted_progress > 0 THEN 0 ELSE 1 END,
                            productive, end_ns - start_ns DESC,
                            CASE WHEN rank IS NULL THEN 1 ELSE 0 END, rank) = 1
            THEN true ELSE false END AS bounding,
       data_loading, startup, recovery, anomalous_steps,
       steps, anomalous_step_count, ideal_step_ns, step_deviation_ns,
       step_spans, steps_without_iteration
FROM figures
ORDER BY run_id, CASE WHEN rank IS NULL THEN 1 ELSE 0 END, rank
