// Free-GPU counters that disagree with a recount from the GPUs themselves (must be none):
// hosts, NVLink domains and leaf switches; and hosts whose impaired_gpus (fragments/host_impaired)
// disagrees with a recount ('HostImpaired'). Read at start-up, which repairs what it finds
// (graphsvc.ingest.counters), and by the tests after concurrent writes.
// A host with no impaired_gpus is drift where it has a GPU (the v9 migration and every write of a
// host's GPUs set it; unset, placement reads each GPU of the host: work, not a wrong answer); a
// host with none, as a fabric import creates for a host not yet ingested, is not.
// @read
// @row kind string?, key string, stored int?, actual int
MATCH (h:Host)
OPTIONAL MATCH (h)-[:HAS_GPU]->(g:GPU)
WITH h, count(CASE WHEN g.state = 'free' AND coalesce(g.health, 'ok') <> 'failed' THEN 1 END) AS actual
WHERE coalesce(h.free_gpus, 0) <> actual
RETURN 'Host' AS kind, h.name AS key, h.free_gpus AS stored, actual
UNION ALL
MATCH (d:NVLinkDomain)
OPTIONAL MATCH (d)<-[:IN_DOMAIN]-(g:GPU)
WITH d, count(CASE WHEN g.state = 'free' AND coalesce(g.health, 'ok') <> 'failed' THEN 1 END) AS actual
WHERE coalesce(d.free_gpus, 0) <> actual
RETURN 'NVLinkDomain' AS kind, d.uuid AS key, d.free_gpus AS stored, actual
UNION ALL
MATCH (leaf:Switch {tier: 'leaf'})
OPTIONAL MATCH (leaf)<-[:UPLINK]-(:NIC)<-[:HAS_NIC]-(h:Host)
WITH leaf, collect(DISTINCT h) AS hosts
UNWIND (CASE WHEN size(hosts) = 0 THEN [null] ELSE hosts END) AS h
OPTIONAL MATCH (h)-[:HAS_GPU]->(g:GPU)
WITH leaf, count(CASE WHEN g.state = 'free' AND coalesce(g.health, 'ok') <> 'failed' THEN 1 END) AS actual
WHERE coalesce(leaf.free_gpus, 0) <> actual
RETURN 'Switch' AS kind, leaf.name AS key, leaf.free_gpus AS stored, actual
UNION ALL
MATCH (h:Host)
//@include host_impaired_count
WITH h, impaired
WHERE coalesce(h.impaired_gpus, -1) <> impaired
OPTIONAL MATCH (h)-[:HAS_GPU]->(g)
WITH h, impaired, count(g) AS gpus
WHERE h.impaired_gpus IS NOT NULL OR gpus > 0
RETURN 'HostImpaired' AS kind, h.name AS key, h.impaired_gpus AS stored, impaired AS actual
