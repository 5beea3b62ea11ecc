// The named hosts' NUMA nodes and PCIe switches, and which switch each GPU (by uuid) and NIC
// (by name) hangs off; one row per host that exists.
// @read
// @param hosts list<string>
// @row host string, numa list<map>, switches list<map>, attachments list<map>
UNWIND $hosts AS wanted
MATCH (h:Host {name: wanted})
OPTIONAL MATCH (h)-[:HAS_NUMA]->(n:NUMANode)
WITH h, collect(DISTINCT {index: n.index, cpus: n.cpus, memory_mib: n.memory_mib}) AS numa
OPTIONAL MATCH (h)-[:HAS_PCIE_SWITCH]->(s:PCIeSwitch)
OPTIONAL MATCH (s)-[:PCIE_UPSTREAM]->(up:PCIeSwitch)
WITH h, numa, collect(DISTINCT {bus_id: s.bus_id, parent: up.bus_id, generation: s.generation,
                                width: s.width, numa_node: s.numa_node}) AS switches
OPTIONAL MATCH (h)-[:HAS_GPU]->(g:GPU)-[:PCIE_UPSTREAM]->(gs:PCIeSwitch)
WITH h, numa, switches, collect(DISTINCT {device: g.uuid, switch: gs.bus_id}) AS gpu_attachments
OPTIONAL MATCH (h)-[:HAS_NIC]->(n:NIC)-[:PCIE_UPSTREAM]->(ns:PCIeSwitch)
WITH h, numa, switches, gpu_attachments, collect(DISTINCT {device: n.name, switch: ns.bus_id}) AS nic_attachments
RETURN h.name AS host, numa, switches, gpu_attachments + nic_attachments AS attachments
ORDER BY host
