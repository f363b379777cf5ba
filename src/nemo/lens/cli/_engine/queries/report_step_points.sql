-- Every step of the processes with at most ? steps, as the report's chart plots them.
SELECT run_id, rank, service, x, duration_ns, wasted FROM report_steps WHERE steps <= ?
ORDER BY run_id, rank, service, x, duration_ns, wasted
