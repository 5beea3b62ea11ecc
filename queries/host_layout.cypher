// A host's NUMA nodes and PCIe switches, and which switch each GPU and NIC hangs off.
MATCH (h:Host {name: $name})
OPTIONAL MATCH (h)-[:HAS_NUMA]->(n:NUMANode)
WITH h, collect(DISTINCT {index: n.index, cpus: n.cpus, memory_mib: n.memory_mib}) AS numa
OPTIONAL MATCH (h)-[:HAS_PCIE_SWITCH]->(s:PCIeSwitch)
OPTIONAL MATCH (s)-[:PCIE_UPSTREAM]->(up:PCIeSwitch)
WITH h, numa, collect(DISTINCT {bus_id: s.bus_id, parent: up.bus_id, generation: s.generation,
                                width: s.width, numa_node: s.numa_node}) AS switches
OPTIONAL MATCH (h)-[:HAS_GPU|HAS_NIC]->(dev)-[:PCIE_UPSTREAM]->(first:PCIeSwitch)
RETURN numa, switches, collect(DISTINCT {device: coalesce(dev.uuid, dev.name), switch: first.bus_id}) AS attachments
