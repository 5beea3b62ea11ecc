// For the diagnosis of a request nothing fits (graphsvc/placement/counting.py): whether a
// request with no NVLink, hop or rail constraint fits, counted in the store instead of
// reading every host's GPUs (#15). The hosts are those the wide search reads
// (placement_hosts_by_free: a free counter >= 1, neither excluded nor of another model by
// the host prefilter; `candidates` counts them: more than the search's budget $limit, and
// the caller searches). The hosts with a free GPU (or a lapsed lease) are grouped by their
// cluster's site (null: none), free counter and `share_most`, the largest per-host share they
// can give (the search takes a host for a share when both its counter and its pool hold it),
// so one statement answers every per-host share:
// - hosts: how many; counter: their free counter (the search gives up when the counters cannot
//   hold the request; stale hosts count, as there);
// - pool: their free GPUs (state free, or a lapsed lease) that meet the per-GPU constraints
//   (fragment placement_usable, rail_up false in $filters), of a model in $models, whose
//   nearest NIC is not down, on hosts not stale;
// - host_most: the most such GPUs on one of them, NIC state aside, up to its counter (the
//   single-host search seeks hosts by counter);
// - doubt: usable GPUs of a model not in $known (the model list is older than the GPU), lapsed:
//   counted GPUs whose lease lapsed (free to the search, not yet to the counters it seeks by):
//   with either the caller searches.
// Only hosts whose counter is at least $least are grouped (`candidates` still counts them all):
// for a per-host share of $least the others add nothing, and that skips most of the scan.
// @read
// @param exclude list<string>
// @param filters map
// @param known list<string>
// @param least int
// @param model string
// @param models list<string>
// @param now float
// @param stale_before float
// @row site string?, cluster string?, counter int, share_most int, hosts int, pool int, host_most int, doubt int
// @row lapsed int, candidates int
MATCH (h:Host)
WHERE h.free_gpus >= 1 AND NOT h.name IN $exclude AND toLower(coalesce(h.gpu_model, '')) CONTAINS $model
WITH count(h) AS candidates
MATCH (h:Host)-[:HAS_GPU]->(g:GPU)
WHERE h.free_gpus >= $least AND NOT h.name IN $exclude AND toLower(coalesce(h.gpu_model, '')) CONTAINS $model
  AND (g.state = 'free' OR (g.state = 'reserved' AND g.lease_expires_at < $now))
OPTIONAL MATCH (g)-[a:NIC_AFFINITY]->(n:NIC)
WITH candidates, h, g, n,
//@include placement_usable
WITH candidates, h,
     sum(CASE WHEN usable AND g.model IN $models THEN 1 ELSE 0 END) AS any_rail,
     sum(CASE WHEN usable AND g.model IN $models AND NOT toLower(coalesce(n.state, '')) IN ['down', 'init']
         THEN 1 ELSE 0 END) AS pool,
     sum(CASE WHEN usable AND NOT g.model IN $known THEN 1 ELSE 0 END) AS doubt,
     sum(CASE WHEN usable AND g.model IN $models AND g.state = 'reserved' THEN 1 ELSE 0 END) AS lapsed
WITH candidates, h, any_rail, pool, doubt, lapsed,
     CASE WHEN coalesce(h.received_at, $now) >= $stale_before THEN 1 ELSE 0 END AS fresh
WITH candidates, h.cluster AS cluster, h.free_gpus AS counter,
     fresh * CASE WHEN h.free_gpus < pool THEN h.free_gpus ELSE pool END AS share_most,
     fresh * pool AS pool, fresh * CASE WHEN h.free_gpus < any_rail THEN h.free_gpus ELSE any_rail END AS host_most,
     doubt, fresh * lapsed AS lapsed
WITH candidates, cluster, counter, share_most, count(*) AS hosts, sum(pool) AS pool, max(host_most) AS host_most,
     sum(doubt) AS doubt, sum(lapsed) AS lapsed
OPTIONAL MATCH (s:Site)-[:HAS_CLUSTER]->(c:Cluster)
WHERE c.name = cluster
WITH candidates, cluster, counter, share_most, hosts, pool, host_most, doubt, lapsed, min(s.name) AS site
RETURN site, cluster, counter, toInteger(share_most) AS share_most, toInteger(hosts) AS hosts, toInteger(pool) AS pool, toInteger(host_most) AS host_most,
       toInteger(doubt) AS doubt, toInteger(lapsed) AS lapsed, candidates
ORDER BY site, cluster, counter, share_most
