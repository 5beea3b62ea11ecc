// Hosts whose last facts arrived before the cutoff (epoch seconds).
// @read
// @param cutoff float
// @row stale int
MATCH (h:Host)
WHERE h.received_at < $cutoff
RETURN count(h) AS stale
