-- Per process, over the table report_steps (report_steps.sql): its steps, how many were
-- wasted, and the median, 90th percentile and longest of the counted ones; whether any
-- carries an iteration.
SELECT run_id, rank, service, count(*),
       sum(CASE WHEN wasted THEN 1 ELSE 0 END),
       {percentile(CASE WHEN wasted THEN NULL ELSE duration_ns END, 0.5)},
       {percentile(CASE WHEN wasted THEN NULL ELSE duration_ns END, 0.9)},
       max(CASE WHEN wasted THEN NULL ELSE duration_ns END), count(iteration)
FROM report_steps GROUP BY run_id, rank, service
