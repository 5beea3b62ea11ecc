// Hosts with free GPUs in one fabric pod (leaves that share spines), most free first.
// @read
// @param exclude list<string>
// @param limit int
// @param model string
// @param pod string
// @row host string, free int?
MATCH (h:Host)
WHERE h.pod = $pod AND h.free_gpus > 0 AND NOT h.name IN $exclude
  AND toLower(coalesce(h.gpu_model, '')) CONTAINS $model
RETURN h.name AS host, h.free_gpus AS free
ORDER BY free DESC, host
LIMIT $limit
