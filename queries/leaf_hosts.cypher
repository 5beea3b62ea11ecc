// Hosts with free GPUs cabled to the given leaf switches, by leaf.
// @read
// @param exclude list<string>
// @param leaves list<string>
// @row leaf string?, host string, free int
MATCH (s:Switch)<-[:UPLINK]-(:NIC)<-[:HAS_NIC]-(h:Host)
WHERE s.name IN $leaves AND h.free_gpus > 0 AND NOT h.name IN $exclude
RETURN DISTINCT s.name AS leaf, h.name AS host, h.free_gpus AS free
