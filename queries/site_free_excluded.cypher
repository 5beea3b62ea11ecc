// One site's free GPUs (free and not failed, as Host.free_gpus counts them) by model, MIG mode and
// degraded health: compareSites says how many of them a placement excludes whatever the free
// counters say (a degraded GPU, one in MIG mode, another model), when the site cannot place a job
// (graphsvc.sites.service). A host with impaired_gpus = 0 (fragments/host_impaired) has none of
// them: its free GPUs are summed from its counters, by its gpu_model, without reading a GPU; only
// the free GPUs of the other hosts are read. Rows of one model, MIG mode and health may repeat
// (one from each part): the caller adds them up.
// @read
// @param site string
// @row model string?, mig bool, degraded bool, gpus int
MATCH (:Site {name: $site})-[:HAS_CLUSTER]->(c:Cluster)
WITH c.name AS cluster
MATCH (h:Host {cluster: cluster})
WHERE h.free_gpus > 0 AND h.impaired_gpus = 0
RETURN h.gpu_model AS model, false AS mig, false AS degraded, toInteger(sum(h.free_gpus)) AS gpus
UNION ALL
MATCH (:Site {name: $site})-[:HAS_CLUSTER]->(c:Cluster)
WITH c.name AS cluster
MATCH (h:Host {cluster: cluster})
WHERE h.free_gpus > 0 AND coalesce(h.impaired_gpus, 1) > 0
MATCH (h)-[:HAS_GPU]->(g)
WHERE g.state = 'free' AND toLower(coalesce(g.health, 'ok')) <> 'failed'
RETURN g.model AS model, coalesce(g.mig_mode, false) AS mig,
       toLower(coalesce(g.health, 'ok')) = 'degraded' AS degraded, count(g) AS gpus
