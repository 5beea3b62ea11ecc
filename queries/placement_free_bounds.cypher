// What the free-GPU counters allow at most, for the diagnosis of a request nothing fits
// (graphsvc/placement/explain.py): the most free GPUs on one host, in one NVLink domain and
// under one leaf switch, the free GPUs of the whole graph, the hosts with at least $share
// free, and the hosts and leaves with any free (the units a search may read before it gives up:
// SearchBudget.units). Every search path seeks its units by these counters, so no request larger than what
// they allow can fit (they also count GPUs a request may refuse: degraded, hot, another model).
// Aggregates only: one row, whatever the cluster's size.
// @read
// @param share int
// @row host int, domain int, leaf int, total int, hosts int, free_hosts int, free_leaves int
OPTIONAL MATCH (h:Host)
WHERE h.free_gpus >= 1
WITH max(h.free_gpus) AS host, toInteger(sum(h.free_gpus)) AS total,
     toInteger(sum(CASE WHEN h.free_gpus >= $share THEN 1 ELSE 0 END)) AS hosts, count(h) AS free_hosts
OPTIONAL MATCH (d:NVLinkDomain)
WHERE d.free_gpus >= 1
WITH host, total, hosts, free_hosts, max(d.free_gpus) AS domain
OPTIONAL MATCH (s:Switch)
WHERE s.tier = 'leaf' AND s.free_gpus >= 1
RETURN coalesce(host, 0) AS host, coalesce(domain, 0) AS domain, coalesce(max(s.free_gpus), 0) AS leaf,
       coalesce(total, 0) AS total, coalesce(hosts, 0) AS hosts, free_hosts, count(s) AS free_leaves
