// For the diagnosis of a request nothing fits (graphsvc/placement/counting.py): whether a
// request with no NVLink or rail constraint fits under one leaf switch (one or two IB hops),
// counted in the store instead of searching leaf by leaf (#15). The leaves and hosts are those
// placement_leaves_fit reads: rail-0 leaves and hosts' first leaves (one per rail group) whose
// free counter is at least $least_leaf (at most the request's size: the search seeks leaves by
// it; the caller reads a little below, for the smaller probes that follow), and the hosts cabled
// to them,
// Host-[:HAS_NIC]->NIC-[:UPLINK]->leaf, whose free counter is at least $least (the per-host
// share), neither excluded, stale nor of another model by the host prefilter. Per leaf (with its
// free counter), the hosts are grouped by cluster (with its site) and by `share_most`, the
// largest per-host share they can give (counter and pool both hold it):
// - hosts: how many; pool: their free GPUs (state free, or a lapsed lease) that meet the per-GPU
//   constraints (fragment placement_usable, rail_up false in $filters), of a model in $models,
//   whose nearest NIC is not down;
// - doubt, lapsed: as in placement_wide_counts (with either the caller searches).
// @read
// @param exclude list<string>
// @param filters map
// @param known list<string>
// @param least int
// @param least_leaf int
// @param model string
// @param models list<string>
// @param now float
// @param stale_before float
// @row leaf string, leaf_counter int, cluster string?, share_most int, hosts int, pool int, doubt int
// @row lapsed int, site string?
MATCH (s:Switch)
WHERE s.tier = 'leaf' AND (coalesce(s.rail, 0) = 0 OR s.home_leaf = true) AND s.free_gpus >= $least_leaf
WITH s  // the leaves first: FalkorDB's planner would start from every host
MATCH (s)<-[:UPLINK]-(:NIC)<-[:HAS_NIC]-(h:Host)
WHERE h.free_gpus >= $least AND NOT h.name IN $exclude AND toLower(coalesce(h.gpu_model, '')) CONTAINS $model
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
WITH leaf, leaf_counter, cluster, share_most, count(*) AS hosts, sum(pool) AS pool, sum(doubt) AS doubt,
     sum(lapsed) AS lapsed
OPTIONAL MATCH (st:Site)-[:HAS_CLUSTER]->(c:Cluster)
WHERE c.name = cluster
WITH leaf, leaf_counter, cluster, share_most, hosts, pool, doubt, lapsed, min(st.name) AS site
RETURN leaf, leaf_counter, cluster, toInteger(share_most) AS share_most, toInteger(hosts) AS hosts, toInteger(pool) AS pool,
       toInteger(doubt) AS doubt, toInteger(lapsed) AS lapsed, site
ORDER BY leaf, cluster, share_most
