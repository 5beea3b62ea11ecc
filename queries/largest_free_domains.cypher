// The NVLink domains with the most free GPUs, probing free counts from the top (see largest_free_hosts).
// @read
// @param limit int
// @param top int
// @row unit string, free int
UNWIND range($top, 1, -1) AS want
MATCH (d:NVLinkDomain)
WHERE d.free_gpus = want
RETURN d.uuid AS unit, want AS free
ORDER BY free DESC, unit
LIMIT $limit
