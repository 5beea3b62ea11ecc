// For the diagnosis of a request nothing fits (graphsvc/placement/counting.py: Counts.fits):
// whether a request with no NVLink, rail, hop or per-host constraint surely fits, by counting
// the eligible GPUs of only the fullest hosts (#15): those whose free counters, fullest first,
// first cover $cover (the request and a quarter more: the wide search reads the hosts covering the
// request first and further by the shortfall and a quarter). A request that
// fits then costs a scan of about that many GPUs, not of every free GPU as
// placement_wide_counts does; when they hold fewer eligible GPUs the caller counts in full.
// (Not a LIMIT on the GPUs counted: with a LIMIT after it FalkorDB 4 repeats rows of the
// optional NIC traversal, a count of 5 GPUs where 4 qualify.)
// The GPUs counted are those placement_wide_counts puts in `pool`, less the lapsed leases
// (state free only: a lapsed lease is free to the search but not to the counters it seeks by):
// free GPUs meeting the per-GPU constraints (fragment placement_usable, rail_up false in
// $filters), of a model in $models, whose nearest NIC is not down, on hosts that are candidates
// of the wide search (placement_hosts_by_free) and not stale. Per cluster (with its site); and
// over every candidate host: how many (`candidates`: more than the search reads and the caller
// does not trust the count) and their free counters summed (`counters`: the search gives up
// when they cannot hold the request).
// @read
// @param cover int
// @param exclude list<string>
// @param filters map
// @param model string
// @param models list<string>
// @param now float
// @param stale_before float
// @row site string?, cluster string?, pool int, candidates int, counters int
MATCH (h:Host)
WHERE h.free_gpus >= 1 AND NOT h.name IN $exclude AND toLower(coalesce(h.gpu_model, '')) CONTAINS $model
WITH h
ORDER BY h.free_gpus DESC, h.name
WITH count(h) AS candidates, sum(h.free_gpus) AS counters, collect(h) AS hosts
WITH candidates, counters, hosts,
     reduce(st = [0, 0], x IN hosts | CASE WHEN st[0] >= $cover THEN st ELSE [st[0] + x.free_gpus, st[1] + 1] END)[1] AS take
UNWIND hosts[0..take] AS h
MATCH (h)-[:HAS_GPU]->(g:GPU)
WHERE coalesce(h.received_at, $now) >= $stale_before AND g.state = 'free' AND g.model IN $models
OPTIONAL MATCH (g)-[a:NIC_AFFINITY]->(n:NIC)
WITH candidates, counters, h, g, n,
//@include placement_usable
WITH candidates, counters, h.cluster AS cluster,
     sum(CASE WHEN usable AND NOT toLower(coalesce(n.state, '')) IN ['down', 'init'] THEN 1 ELSE 0 END) AS pool
OPTIONAL MATCH (s:Site)-[:HAS_CLUSTER]->(c:Cluster)
WHERE c.name = cluster
WITH candidates, counters, cluster, pool, min(s.name) AS site
RETURN site, cluster, toInteger(pool) AS pool, candidates, toInteger(counters) AS counters
ORDER BY site, cluster
