-- The bucket each span group's row shows: its schema bucket, when its category is goodput.
SELECT span_group, bucket FROM span_groups
WHERE category = 'goodput' AND bucket IS NOT NULL AND bucket <> ''
