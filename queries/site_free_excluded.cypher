// One site's free GPUs (free and not failed, as Host.free_gpus counts them) by model, MIG mode and
// degraded health: compareSites says how many of them a placement excludes whatever the free
// counters say (a degraded GPU, one in MIG mode, another model), when the site cannot place a job
// (graphsvc.sites.service). A host with impaired_gpus = 0 (fragments/host_impaired) has none of
// them: its free GPUs are summed from its counters, by its gpu_model, without reading a GPU; only
// the free GPUs of the other hosts (impaired_gpus above 0, or none: a graph before v9) are read.
// One row for each model, MIG mode and health (the caller adds rows up all the same).
// @read
// @param site string
// @row model string?, mig bool, degraded bool, gpus int
MATCH (:Site {name: $site})-[:HAS_CLUSTER]->(c:Cluster)
WITH c.name AS cluster
MATCH (h:Host {cluster: cluster})
WHERE h.free_gpus > 0
WITH h, coalesce(h.impaired_gpus, 1) = 0 AS clean
OPTIONAL MATCH (h)-[:HAS_GPU]->(g)
WHERE NOT clean AND g.state = 'free' AND toLower(coalesce(g.health, 'ok')) <> 'failed'
WITH h, clean, g
WHERE clean OR g IS NOT NULL
RETURN CASE WHEN clean THEN h.gpu_model ELSE g.model END AS model,
       CASE WHEN clean THEN false ELSE coalesce(g.mig_mode, false) END AS mig,
       CASE WHEN clean THEN false ELSE toLower(coalesce(g.health, 'ok')) = 'degraded' END AS degraded,
       toInteger(sum(CASE WHEN clean THEN h.free_gpus ELSE 1 END)) AS gpus
