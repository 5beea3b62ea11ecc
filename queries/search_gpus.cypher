// Explorer search: GPUs whose uuid contains the search text, with their host and its cluster.
// @read
// @param first int
// @param needle string
// @row uuid string, index int, model string, host string, cluster string?
MATCH (h:Host)-[:HAS_GPU]->(g:GPU)
WHERE toLower(g.uuid) CONTAINS $needle
RETURN g.uuid AS uuid, g.index AS index, g.model AS model, h.name AS host, h.cluster AS cluster
ORDER BY uuid
LIMIT $first
