// Every switch with its tier and the switches it uplinks to, for what a switch or link failure cuts.
// @read
// @row name string, tier string, uplinks list<string>
MATCH (s:Switch)
OPTIONAL MATCH (s)-[:UPLINK]->(up:Switch)
WITH s, collect(up.name) AS uplinks
RETURN s.name AS name, s.tier AS tier, uplinks
ORDER BY name
