// Recomputes the free-GPU counter of the given leaf switches: free GPUs on hosts cabled to them.
// @write
// @param names list<string>
// @row leaves int?
MATCH (leaf:Switch)
WHERE leaf.name IN $names
OPTIONAL MATCH (leaf)<-[:UPLINK]-(:NIC)<-[:HAS_NIC]-(h:Host)
WITH leaf, collect(DISTINCT h) AS hosts
WITH leaf, reduce(total = 0, h IN hosts | total + coalesce(h.free_gpus, 0)) AS free
SET leaf.free_gpus = free
RETURN count(leaf) AS leaves
