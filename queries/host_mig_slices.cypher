// The MIG slices of the named hosts, with their GPU and holder (Host.migSlices: the explorer's host view).
// @read
// @param hosts list<string>
// @row host string, gpu string, gpu_index int, gpu_model string, uuid string, profile string, gpu_instance_id int?
// @row memory_mib int?, state string, reservation string?
MATCH (h:Host)-[:HAS_GPU]->(g:GPU)-[:HAS_SLICE]->(s:MigSlice)
WHERE h.name IN $hosts
RETURN h.name AS host, g.uuid AS gpu, g.index AS gpu_index, g.model AS gpu_model, s.uuid AS uuid, s.profile AS profile,
       s.gpu_instance_id AS gpu_instance_id, s.memory_mib AS memory_mib, s.state AS state,
       s.reservation AS reservation
ORDER BY host, gpu_index, gpu_instance_id, uuid
