// Hosts whose last facts arrived before the cutoff, by name.
// @read
// @param cutoff float
// @param limit int
// @row name string
MATCH (h:Host)
WHERE h.received_at < $cutoff
RETURN h.name AS name
ORDER BY name
LIMIT $limit
