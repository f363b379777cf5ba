-- nemo-lens check: per span group seen in the trace (or enabled by --spec, in the table
-- check_enabled), its rate -- spans per iteration (per step execution of the rank, the worst
-- rank's) and per process lifetime -- against the bounds of its tier (the table check_tiers:
-- name, order, most per lifetime, most per iteration, quiet), and its finding: over its tier,
-- too frequent for the $preset preset, or enabled and never seen (a tier from $ceiling on
-- fires every iteration). `unseen`: enabled and never seen, flagged or not.
WITH tiers AS (SELECT * FROM check_tiers),
known AS (  -- a group two classes share takes the more frequent tier
  SELECT g.span_group, arg_max(t.fires, t.position) AS fires
  FROM span_groups g JOIN tiers t ON t.fires = g.fires
  GROUP BY g.span_group
),
in_default AS (
  SELECT DISTINCT span_group FROM span_group_presets WHERE preset = $preset
),
enabled AS (SELECT span_group FROM check_enabled),
rank_steps AS (
  SELECT run_id, service, rank, count(*) AS steps FROM steps GROUP BY ALL
),
per_rank AS (
  SELECT run_id, service, rank, span_group, count(*) AS spans
  FROM spans WHERE span_group <> '(none)' GROUP BY ALL
),
per_lifetime AS (
  SELECT span_group, max(spans) AS per_lifetime FROM (
    SELECT run_id, service, rank, lifetime, span_group, count(*) AS spans
    FROM spans GROUP BY ALL
  ) GROUP BY span_group
),
seen AS (
  SELECT p.span_group, sum(p.spans) AS spans, count(*) AS ranks,
    max(p.spans / s.steps) AS per_iteration,
    arg_max(p.rank, p.spans / s.steps) AS worst_rank
  FROM per_rank p LEFT JOIN rank_steps s
    ON s.run_id IS NOT DISTINCT FROM p.run_id AND s.service IS NOT DISTINCT FROM p.service
   AND s.rank IS NOT DISTINCT FROM p.rank
  GROUP BY p.span_group
),
has_steps AS (SELECT count(*) > 0 AS any_steps FROM steps),
measured AS (
  SELECT coalesce(s.span_group, e.span_group) AS span_group, k.fires,
    d.span_group IS NOT NULL AS in_default, e.span_group IS NOT NULL AS enabled,
    coalesce(s.spans, 0) AS spans, s.ranks, s.per_iteration, s.worst_rank, l.per_lifetime,
    t.per_lifetime AS lifetime_bound, t.per_iteration AS iteration_bound, t.quiet,
    t.position, t.position >= $ceiling AS every_iteration, h.any_steps
  FROM seen s FULL JOIN enabled e ON e.span_group = s.span_group
  CROSS JOIN has_steps h
  LEFT JOIN known k ON k.span_group = coalesce(s.span_group, e.span_group)
  LEFT JOIN tiers t ON t.fires = k.fires
  LEFT JOIN in_default d ON d.span_group = coalesce(s.span_group, e.span_group)
  LEFT JOIN per_lifetime l ON l.span_group = s.span_group
)
SELECT span_group AS "group", coalesce(fires, '?') AS fires,
  CASE WHEN in_default THEN 'yes' ELSE '' END AS "default",
  spans, round(per_iteration, 2) AS per_iteration, worst_rank,
  per_lifetime AS most_per_lifetime,
  concat_ws('; ',
    CASE WHEN per_lifetime > lifetime_bound THEN
      'over its tier: ' || per_lifetime || ' in one process lifetime, once allows 1'
    END,
    CASE WHEN per_iteration > iteration_bound THEN
      'over its tier: ' || round(per_iteration, 2) || ' per iteration (rank ' ||
      coalesce(CAST(worst_rank AS VARCHAR), 'unknown') || '), ' || fires || ' allows 1'
    END,
    CASE WHEN in_default AND quiet AND per_iteration >= 1 THEN
      'too frequent for default: ' || round(per_iteration, 2) ||
      ' per iteration, default stays below 1 (quiet tiers only)'
    END,
    CASE WHEN enabled AND spans = 0 AND every_iteration AND any_steps
      THEN 'enabled, never seen'
    END
  ) AS finding,
  enabled AND spans = 0 AS unseen
FROM measured
ORDER BY finding = '', coalesce(position, $tiers), span_group
