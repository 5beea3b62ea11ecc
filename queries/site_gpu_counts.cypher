// Per site and GPU model: hosts, GPUs and free GPUs (from the hosts' free counters).
// @read
// @row site any, model any, hosts any, gpus any, free any
MATCH (s:Site)-[:HAS_CLUSTER]->(c:Cluster)
MATCH (h:Host)
WHERE h.cluster = c.name
RETURN s.name AS site, coalesce(h.gpu_model, '') AS model, count(h) AS hosts,
       sum(coalesce(h.gpu_count, 0)) AS gpus, sum(coalesce(h.free_gpus, 0)) AS free
ORDER BY site, model
