// For the diagnosis of a request nothing fits (graphsvc/placement/counting.py): whether a
// request with no NVLink or rail constraint fits under one leaf switch (one or two IB hops),
// counted in the store instead of searching leaf by leaf (#15). The leaves and hosts are those
// placement_leaves_fit reads: rail-0 leaves (one per rail group) and the hosts cabled to them,
// Host-[:HAS_NIC]->NIC-[:UPLINK]->leaf, with a free GPU, neither excluded, stale nor of another
// model by the host prefilter. Per leaf (with its free counter, which the search seeks by), the
// hosts are grouped by cluster (the caller knows each cluster's site from placement_wide_counts)
// and by `share_most`, the largest per-host share they can give (counter and pool both hold it):
// - hosts: how many; pool: their free GPUs (state free, or a lapsed lease) that meet the per-GPU
//   constraints (fragment placement_usable, rail_up false in $filters), of a model in $models,
//   whose nearest NIC is not down;
// - doubt, lapsed: as in placement_wide_counts (with either the caller searches).
// @read
// @param exclude list<string>
// @param filters map
// @param known list<string>
// @param model string
// @param models list<string>
// @param now float
// @param stale_before float
// @row leaf string, leaf_counter int, cluster string?, share_most int, hosts int, pool int, doubt int
// @row lapsed int
MATCH (s:Switch)
WHERE s.tier = 'leaf' AND coalesce(s.rail, 0) = 0 AND s.free_gpus >= 1
MATCH (s)<-[:UPLINK]-(:NIC)<-[:HAS_NIC]-(h:Host)
WHERE h.free_gpus >= 1 AND NOT h.name IN $exclude AND toLower(coalesce(h.gpu_model, '')) CONTAINS $model
  AND coalesce(h.received_at, $now) >= $stale_before
WITH DISTINCT s, h
MATCH (h)-[:HAS_GPU]->(g:GPU)
WHERE g.state = 'free' OR (g.state = 'reserved' AND g.lease_expires_at < $now)
OPTIONAL MATCH (g)-[a:NIC_AFFINITY]->(n:NIC)
WITH s, h, g, n,
//@include placement_usable
WITH s, h,
     sum(CASE WHEN usable AND g.model IN $models AND NOT toLower(coalesce(n.state, '')) IN ['down', 'init']
         THEN 1 ELSE 0 END) AS pool,
     sum(CASE WHEN usable AND NOT g.model IN $known THEN 1 ELSE 0 END) AS doubt,
     sum(CASE WHEN usable AND g.model IN $models AND g.state = 'reserved' THEN 1 ELSE 0 END) AS lapsed
WITH s.name AS leaf, s.free_gpus AS leaf_counter, h.cluster AS cluster,
     CASE WHEN h.free_gpus < pool THEN h.free_gpus ELSE pool END AS share_most, pool, doubt, lapsed
RETURN leaf, leaf_counter, cluster, toInteger(share_most) AS share_most, count(*) AS hosts, toInteger(sum(pool)) AS pool,
       toInteger(sum(doubt)) AS doubt, toInteger(sum(lapsed)) AS lapsed
ORDER BY leaf, cluster, share_most
