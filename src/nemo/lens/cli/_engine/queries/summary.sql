-- Per process (run, rank, service) and span group: the span count and the durations'
-- total, p50 and p99 (linear interpolation between the nearest ranks). The mean is
-- total / count, divided by the caller so that it is the exact sum's quotient.
SELECT run_id, rank, service, span_group,
       count(*) AS spans,
       sum(duration_ns) AS total_ns,
       {percentile(duration_ns, 0.5)} AS p50_ns,
       {percentile(duration_ns, 0.99)} AS p99_ns
FROM spans
GROUP BY run_id, rank, service, span_group
