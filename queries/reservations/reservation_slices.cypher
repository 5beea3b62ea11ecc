// The MIG slices of these reservations (those with a slice_count), with their GPU and host;
// `held` is false for a slice taken over after the lease lapsed.
// @read
// @param ids list<string>
// @row reservation string, slices list<map>
MATCH (r:Reservation)-[:HOLDS_SLICE]->(s:MigSlice)
WHERE r.id IN $ids
MATCH (h:Host)-[:HAS_GPU]->(g:GPU)-[:HAS_SLICE]->(s)
WITH r, s, g, h
ORDER BY h.name, g.index, s.gpu_instance_id, s.uuid
RETURN r.id AS reservation, collect({
  uuid: s.uuid, profile: s.profile, gpu_instance_id: s.gpu_instance_id, memory_mib: s.memory_mib,
  gpu: g.uuid, gpu_index: g.index, gpu_model: g.model, host: h.name, held: s.reservation = r.id
}) AS slices
ORDER BY reservation
