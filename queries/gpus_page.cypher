// One page of GPUs, by uuid (keyset pagination), with their host.
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
