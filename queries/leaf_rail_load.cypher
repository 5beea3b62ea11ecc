// Per leaf switch: the GPUs whose nearest NIC is cabled to it, and how many of them are free and healthy.
// @read
// @param cluster string
// @row leaf string?, gpus int, free float
MATCH (leaf:Switch {cluster: $cluster, tier: 'leaf'})<-[:UPLINK]-(:NIC)<-[:NIC_AFFINITY]-(g:GPU)
RETURN leaf.name AS leaf, count(g) AS gpus,
       sum(CASE WHEN g.state = 'free' AND coalesce(g.health, 'ok') IN ['ok', 'unknown'] THEN 1 ELSE 0 END) AS free
ORDER BY leaf
