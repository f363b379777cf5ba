-- The spans the report draws one by one: the ? longest (on a tie of durations, the
-- earlier start, then the longer-running, then the name decides).
SELECT run_id, rank, service, span_group, name, start_ns, end_ns, status_code,
       status_description, attributes
FROM spans
ORDER BY duration_ns DESC, start_ns, end_ns DESC, name
LIMIT ?
