// Explorer search: hosts whose name contains any search piece (the service ranks them).
// @read
// @param first int
// @param pieces list<string>
// @row name string, cluster string?, rack string?, scalable_unit string?, model string?
MATCH (h:Host)
WHERE any(p IN $pieces WHERE toLower(h.name) CONTAINS p)
RETURN h.name AS name, h.cluster AS cluster, h.rack AS rack, h.scalable_unit AS scalable_unit, h.gpu_model AS model
ORDER BY name
LIMIT $first
