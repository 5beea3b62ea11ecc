// One page of GPUs, by uuid (keyset pagination), with their host.
// @read
// @param after string
// @param first int
// @param health string
// @param host string
// @param min_memory_mib int
// @param model string
// @param state string
// @row uuid string, index int, model string, memory_mib int?, state string, health string?
// @row temperature_c float?, utilization_pct float?, numa_node int?, pci_bus_id string?
// @row nvlink_domain string?, host string, rack string?, scalable_unit string?
MATCH (h:Host)-[:HAS_GPU]->(g:GPU)
WHERE g.uuid > $after
  AND toLower(g.model) CONTAINS $model
  AND ($state = '' OR g.state = $state)
  AND ($health = '' OR g.health = $health)
  AND ($host = '' OR h.name = $host)
  AND coalesce(g.memory_mib, 0) >= $min_memory_mib
RETURN g.uuid AS uuid, g.index AS index, g.model AS model, g.memory_mib AS memory_mib, g.state AS state,
       g.health AS health, g.temperature_c AS temperature_c, g.utilization_pct AS utilization_pct,
       g.numa_node AS numa_node, g.pci_bus_id AS pci_bus_id, g.nvlink_domain AS nvlink_domain,
       h.name AS host, h.rack AS rack, h.scalable_unit AS scalable_unit
ORDER BY uuid
LIMIT $first
