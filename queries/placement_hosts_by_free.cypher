// Candidate hosts in best-fit order: hosts with exactly $first_size free GPUs first, then
// the next size towards $last_size, ... Each step is an index seek on Host.free_gpus, and the scan stops after
// $limit rows, so the cost follows the candidates read, not the size of the cluster.
UNWIND range($first_size, $last_size, $step) AS want
MATCH (h:Host)
WHERE h.free_gpus = want AND NOT h.name IN $exclude AND toLower(coalesce(h.gpu_model, '')) CONTAINS $model
RETURN h.name AS host, want AS free
SKIP $skip
LIMIT $limit
