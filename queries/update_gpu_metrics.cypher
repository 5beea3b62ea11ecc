// Applies a host's fast-changing GPU metrics (temperature, load, health), keyed by uuid.
// Writes nothing when facts or metrics newer than $collected_at are already stored;
// uuids the host does not have are ignored (the next full facts will tell).
// @write
// @param collected_at float
// @param host string
// @param metrics map
// @param received_at float
// @row host string, updated list<string>
MATCH (h:Host {name: $host})
WITH h, coalesce(h.metrics_at, 0.0) AS metrics_at, coalesce(h.collected_at, 0.0) AS collected_at
WITH h, CASE WHEN metrics_at > collected_at THEN metrics_at ELSE collected_at END AS newest
WHERE newest <= $collected_at
SET h.metrics_at = $collected_at, h.received_at = $received_at
WITH h
OPTIONAL MATCH (h)-[:HAS_GPU]->(g:GPU)
WHERE g.uuid IN keys($metrics)
SET g += $metrics[g.uuid]
WITH h, collect(g.uuid) AS updated
RETURN h.name AS host, updated
