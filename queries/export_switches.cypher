// A cluster's switches and their uplinks to other switches, for exports.
// @read
// @param cluster string
// @row name string, tier string, uplinks list<string>
MATCH (s:Switch)
WHERE s.cluster = $cluster
OPTIONAL MATCH (s)-[:UPLINK]->(up:Switch)
RETURN s.name AS name, s.tier AS tier, collect(up.name) AS uplinks
ORDER BY name
