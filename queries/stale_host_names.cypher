// Hosts whose last facts arrived before the cutoff, by name.
MATCH (h:Host)
WHERE h.received_at < $cutoff
RETURN h.name AS name
ORDER BY name
LIMIT $limit
