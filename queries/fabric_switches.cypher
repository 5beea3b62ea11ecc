// One page of a cluster's switches by name, with their uplinks and how many NICs they serve.
// @read
// @param after string
// @param cluster string
// @param first int
// @param tier string
// @row name string, tier string, scalable_unit string?, rail int?, model string?, free_gpus int?
// @row uplinks list<map>, nics int
MATCH (s:Switch)
WHERE s.cluster = $cluster AND s.name > $after AND ($tier = '' OR s.tier = $tier)
WITH s
ORDER BY s.name
LIMIT $first
OPTIONAL MATCH (s)-[u:UPLINK]->(up:Switch)
WITH s, u, up
ORDER BY s.name, up.name
WITH s, collect(CASE WHEN up IS NULL THEN NULL ELSE {to: up.name, links: u.links, bandwidth_gbps: u.bandwidth_gbps} END) AS uplinks
OPTIONAL MATCH (s)<-[:UPLINK]-(n:NIC)
RETURN s.name AS name, s.tier AS tier, s.scalable_unit AS scalable_unit, s.rail AS rail, s.model AS model,
       s.free_gpus AS free_gpus, uplinks, count(n) AS nics
ORDER BY name
