-- Step spans (spans feeding the productive bucket), and how many carry no iteration.
SELECT count(*) AS steps,
       sum(CASE WHEN s.iteration IS NULL THEN 1 ELSE 0 END) AS without_iteration
FROM spans s JOIN span_groups g ON g.span_group = s.span_group
WHERE g.bucket = 'productive' AND coalesce(s.span_category, g.category) = 'goodput'
