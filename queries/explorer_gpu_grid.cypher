// The explorer's overview: every GPU's drawing state, one page by uuid (keyset pagination).
// @read
// @param after string
// @param first int
// @row uuid string, index int, model string, state string, health string?, temperature_c float?
// @row utilization_pct float?, nvlink_domain string?, host string
MATCH (h:Host)-[:HAS_GPU]->(g:GPU)
WHERE g.uuid > $after
RETURN g.uuid AS uuid, g.index AS index, g.model AS model, g.state AS state, g.health AS health,
       g.temperature_c AS temperature_c, g.utilization_pct AS utilization_pct,
       g.nvlink_domain AS nvlink_domain, h.name AS host
ORDER BY uuid
LIMIT $first
