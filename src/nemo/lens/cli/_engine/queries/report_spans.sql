-- Every span as the report lays it out, in start order, with whether it is a step
-- (a span feeding the productive bucket: its category, else its group's, is goodput).
SELECT s.run_id, s.rank, s.service, s.span_group, s.name, s.lifetime, s.start_ns, s.end_ns,
       s.status_code, s.status_description, s.attributes, s.iteration, s.truncated,
       CASE WHEN g.bucket = 'productive' AND coalesce(s.span_category, g.category) = 'goodput'
            THEN true ELSE false END AS step
FROM spans s LEFT JOIN span_groups g ON g.span_group = s.span_group
ORDER BY s.start_ns, s.end_ns DESC, s.name
