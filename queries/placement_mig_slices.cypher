// The free MIG slices of one profile, with their GPU and host, for placement.mig.choose_slices.
// A slice counts as free when its state is free or its holder is not live any more (ended, or
// its lease lapsed before the reaper ran), as a GPU's lapsed hold does, and its GPU is not held
// whole (a GPU reserved before it was partitioned keeps its holder until released).
// @read
// @param exclude list<string>
// @param now float
// @param profile string
// @row uuid string, profile string, gpu_instance_id int?, memory_mib int?, gpu string, gpu_index int
// @row gpu_model string, health string?, host string, received_at float?
MATCH (s:MigSlice {profile: $profile})
WHERE NOT s.host IN $exclude
MATCH (h:Host)-[:HAS_GPU]->(g:GPU)-[:HAS_SLICE]->(s)
WHERE g.state = 'free' OR coalesce(g.lease_expires_at, 0.0) < $now
OPTIONAL MATCH (r:Reservation {id: coalesce(s.reservation, '')})
WITH s, g, h, r
WITH s, g, h, CASE WHEN s.state = 'free' OR r IS NULL OR r.state <> 'active' OR r.expires_at < $now THEN 1 ELSE 0 END AS free
WHERE free = 1
RETURN s.uuid AS uuid, s.profile AS profile, s.gpu_instance_id AS gpu_instance_id, s.memory_mib AS memory_mib,
       g.uuid AS gpu, g.index AS gpu_index, g.model AS gpu_model, g.health AS health, h.name AS host,
       h.received_at AS received_at
ORDER BY host, gpu_index, gpu_instance_id, uuid
