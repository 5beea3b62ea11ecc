// The hosts with the most free GPUs, probing free counts down from $top:
// index seeks per free count; ties are broken by name (ORDER BY), so the answer never depends
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
ORDER BY want DESC, h.name
LIMIT $limit
WITH h, max(want) AS free
RETURN h.name AS unit, free
ORDER BY free DESC, unit
