// One page of hosts, by name (keyset pagination: the cursor is the last name seen).
// @read
// @param after string
// @param cluster string
// @param first int
// @param min_free int
// @param model string
// @param rack string
// @param scalable_unit string
// @param stale_before float
// @row name string, cluster string?, rack string?, scalable_unit string?, gpu_model string?, gpu_count int?
// @row free_gpus int?, received_at float?, collected_at float?
MATCH (h:Host)
WHERE h.name > $after
  AND ($cluster = '' OR h.cluster = $cluster)
  AND ($rack = '' OR h.rack = $rack)
  AND ($scalable_unit = '' OR h.scalable_unit = $scalable_unit)
  AND toLower(coalesce(h.gpu_model, '')) CONTAINS $model
  AND coalesce(h.free_gpus, 0) >= $min_free
  AND ($stale_before = 0.0 OR h.received_at < $stale_before)
RETURN h.name AS name, h.cluster AS cluster, h.rack AS rack, h.scalable_unit AS scalable_unit,
       h.gpu_model AS gpu_model, h.gpu_count AS gpu_count, h.free_gpus AS free_gpus,
       h.received_at AS received_at, h.collected_at AS collected_at
ORDER BY name
LIMIT $first
