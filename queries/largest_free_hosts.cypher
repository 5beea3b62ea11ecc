// The hosts with the most free GPUs, probing free counts down from $top:
// index seeks per free count; ties are broken by (tie_bucket, name) as in the placement statements' largest
// free blocks (fragment placement_free_blocks), so the answer never depends
// on the plan's row order (Neo4j gives no order without one). A host whose count another
// transaction changes between two seeks (Neo4j reads committed data) is seen under both
// counts: grouped by host after the LIMIT, it is one row (the answer may then come back short).
// @read
// @param limit int
// @param top int
// @row unit string, free int
UNWIND range($top, 1, -1) AS want
MATCH (h:Host)
WHERE h.free_gpus = want
WITH h, want
ORDER BY want DESC, h.tie_bucket, h.name
LIMIT $limit
WITH h, max(want) AS free
WITH h.name AS unit, free, h.tie_bucket AS bucket
RETURN unit, free
ORDER BY free DESC, bucket, unit
