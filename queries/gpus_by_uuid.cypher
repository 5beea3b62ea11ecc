// GPUs by uuid with their host and live readings, for reservations, conflicts and checks.
// @read
// @param uuids list<string>
// @row uuid string, index int, model string, memory_mib int?, state string, health string?
// @row temperature_c float?, utilization_pct float?, numa_node int?, pci_bus_id string?
// @row nvlink_domain string?, host string, mig_mode bool?
MATCH (h:Host)-[:HAS_GPU]->(g:GPU)
WHERE g.uuid IN $uuids
RETURN g.uuid AS uuid, g.index AS index, g.model AS model, g.memory_mib AS memory_mib, g.state AS state,
       g.health AS health, g.temperature_c AS temperature_c, g.utilization_pct AS utilization_pct,
       g.numa_node AS numa_node, g.pci_bus_id AS pci_bus_id, g.nvlink_domain AS nvlink_domain,
       h.name AS host, g.mig_mode AS mig_mode
ORDER BY host, index
