// The NVLink domains with the most free GPUs, probing free counts from the top (see largest_free_hosts),
// one row per domain.
// @read
// @param limit int
// @param top int
// @row unit string, free int
UNWIND range($top, 1, -1) AS want
MATCH (d:NVLinkDomain)
WHERE d.free_gpus = want
WITH d, want
ORDER BY want DESC, d.tie_bucket, d.uuid
LIMIT $limit
WITH d, max(want) AS free
WITH d.uuid AS unit, free, d.tie_bucket AS bucket
RETURN unit, free
ORDER BY free DESC, bucket, unit
