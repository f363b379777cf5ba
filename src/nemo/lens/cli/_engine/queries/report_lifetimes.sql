-- Each process lifetime's extent, for the report's restart marks (the gaps between them).
SELECT run_id, rank, service, lifetime, min(start_ns) AS first_start, max(end_ns) AS last_end
FROM spans
GROUP BY run_id, rank, service, lifetime
