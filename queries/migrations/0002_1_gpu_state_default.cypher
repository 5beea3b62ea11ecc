// Graph v1 -> v2: GPUs gained a `state` (free/reserved) that placement and reservations read.
// GPUs written before that get 'free'; hosts get their gpu_count. Idempotent.
// @write
// @row updated int
MATCH (h:Host)
OPTIONAL MATCH (h)-[:HAS_GPU]->(g:GPU)
WITH h, collect(g) AS gpus
SET h.gpu_count = size(gpus)
WITH gpus
UNWIND gpus AS g
WITH g
WHERE g.state IS NULL
SET g.state = 'free'
RETURN count(g) AS updated
