-- How much of each bin of time the spans of a covered row cover. The parameters: the
-- trace's first start, a bin's width in ns and the last bin's index; report_covered holds
-- the rows to cover. A span within one bin adds its share of it (part); a longer one adds
-- its share of its first and last bins, and every bin between is covered whole: +1 from the
-- bin after its first (whole), -1 from its last, summed in bin order by the reader.
WITH grid AS (
  SELECT CAST(? AS BIGINT) AS origin, CAST(? AS DOUBLE) AS width, CAST(? AS BIGINT) AS last_bin
),
placed AS (
  SELECT s.run_id, s.rank, s.service, s.span_group,
         (s.start_ns - g.origin) / g.width AS lo, (s.end_ns - g.origin) / g.width AS hi,
         g.last_bin
  FROM spans s
  JOIN report_covered c
    ON c.run_id = s.run_id AND c.rank IS NOT DISTINCT FROM s.rank
    AND c.service IS NOT DISTINCT FROM s.service AND c.span_group = s.span_group
  CROSS JOIN grid g
),
binned AS (
  SELECT run_id, rank, service, span_group, lo, hi,
         least(CAST(floor(lo) AS BIGINT), last_bin) AS first_bin,
         least(CAST(floor(hi) AS BIGINT), last_bin) AS end_bin
  FROM placed
),
pieces AS (
  SELECT run_id, rank, service, span_group, first_bin AS bin,
         CASE WHEN first_bin = end_bin THEN hi - lo ELSE first_bin + 1 - lo END AS part,
         0 AS whole
  FROM binned
  UNION ALL
  SELECT run_id, rank, service, span_group, end_bin, hi - end_bin, 0
  FROM binned WHERE end_bin > first_bin
  UNION ALL
  SELECT run_id, rank, service, span_group, first_bin + 1, 0, 1
  FROM binned WHERE end_bin > first_bin + 1
  UNION ALL
  SELECT run_id, rank, service, span_group, end_bin, 0, -1
  FROM binned WHERE end_bin > first_bin + 1
)
SELECT run_id, rank, service, span_group, bin, sum(part) AS part, sum(whole) AS whole
FROM pieces
GROUP BY run_id, rank, service, span_group, bin
ORDER BY run_id, rank, service, span_group, bin
