// The baseline placement benchmarks compare against: scan every GPU, group by host, keep
// hosts with enough free GPUs of the model. What a graph query without counters costs.
// @read
// @param limit int
// @param model string
// @param n int
// @row host string, free int
MATCH (h:Host)-[:HAS_GPU]->(g:GPU)
WHERE g.state = 'free' AND toLower(g.model) CONTAINS $model AND coalesce(g.health, 'ok') <> 'failed'
WITH h, count(g) AS free
WHERE free >= $n
RETURN h.name AS host, free
ORDER BY free, host
LIMIT $limit
