// Graph v2 -> v3 (1/3): hosts gained free_gpus and gpu_model, the counters placement seeks on.
// @write
// @row hosts int
MATCH (h:Host)
OPTIONAL MATCH (h)-[:HAS_GPU]->(g:GPU)
WITH h, count(CASE WHEN g.state = 'free' AND coalesce(g.health, 'ok') <> 'failed' THEN 1 END) AS free, min(g.model) AS model
SET h.free_gpus = free, h.gpu_model = model
RETURN count(h) AS hosts
