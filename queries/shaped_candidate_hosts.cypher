// Hosts with a free GPU whose model contains $model (a coarse prefilter: the shaped search
// matches models exactly), by name, for a shaped job's search over TP groups.
// @read
// @param exclude list<string>
// @param limit int
// @param model string
// @row host string
MATCH (h:Host)
WHERE h.free_gpus >= 1 AND NOT h.name IN $exclude AND toLower(coalesce(h.gpu_model, '')) CONTAINS $model
RETURN h.name AS host
ORDER BY host
LIMIT $limit
