// Graph v2 -> v3 (3/3): leaf switches gained free_gpus (free GPUs on the hosts cabled to them).
// @write
// @row leaves int?
MATCH (leaf:Switch)
WHERE leaf.tier = 'leaf'
OPTIONAL MATCH (leaf)<-[:UPLINK]-(:NIC)<-[:HAS_NIC]-(h:Host)
WITH leaf, collect(DISTINCT h) AS hosts
SET leaf.free_gpus = reduce(total = 0, h IN hosts | total + coalesce(h.free_gpus, 0))
RETURN count(leaf) AS leaves
