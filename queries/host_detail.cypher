// The named hosts with their devices (one row per host that exists, by name): the one read
// graphsvc.read.hosts assembles every host view from (GraphQL, REST, NCCL, gres, DRA).
// @read
// @param hosts list<string>
// @row name string, cluster string?, rack string?, scalable_unit string?, collected_at float?
// @row received_at float?, collector_version string?, cpu_model string?, gpus list<map>, nics list<map>
UNWIND $hosts AS wanted
MATCH (h:Host {name: wanted})
OPTIONAL MATCH (r:Rack)-[:HAS_HOST]->(h)
OPTIONAL MATCH (h)-[:HAS_GPU]->(g:GPU)
OPTIONAL MATCH (g)-[:IN_DOMAIN]->(d:NVLinkDomain)
WITH h, r, g, d
ORDER BY g.index
WITH h, r, collect(CASE WHEN g IS NULL THEN NULL ELSE {
  uuid: g.uuid, index: g.index, model: g.model, memory_mib: g.memory_mib, state: g.state,
  health: g.health, temperature_c: g.temperature_c, utilization_pct: g.utilization_pct,
  numa_node: g.numa_node, pci_bus_id: g.pci_bus_id, nvlink_domain: d.uuid,
  compute_capability: g.compute_capability
} END) AS gpus
OPTIONAL MATCH (h)-[:HAS_NIC]->(n:NIC)
OPTIONAL MATCH (n)-[up:UPLINK]->(leaf:Switch)
WITH h, r, gpus, n, leaf
ORDER BY n.name
WITH h, r, gpus, collect(CASE WHEN n IS NULL THEN NULL ELSE {
  name: n.name, rate_gbps: n.rate_gbps, state: n.state, rail: n.rail, numa_node: n.numa_node,
  guid: n.guid, leaf: leaf.name, pci_bus_id: n.pci_bus_id, link_layer: n.link_layer, netdev: n.netdev
} END) AS nics
RETURN h.name AS name, h.cluster AS cluster, r.name AS rack, h.scalable_unit AS scalable_unit,
       h.collected_at AS collected_at, h.received_at AS received_at,
       h.collector_version AS collector_version, h.cpu_model AS cpu_model, gpus, nics
ORDER BY name
