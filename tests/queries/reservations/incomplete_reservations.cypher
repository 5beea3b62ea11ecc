// Invariant check: live reservations that do not hold every GPU they were granted (must be none).
// @read
// @param now float
// @row id string, held int, granted int
MATCH (r:Reservation)
WHERE r.state = 'active' AND r.expires_at >= $now
OPTIONAL MATCH (r)-[:HOLDS]->(g:GPU)
WHERE g.reservation = r.id AND g.state = 'reserved'
WITH r, count(g) AS held
WHERE held <> r.gpu_count
RETURN r.id AS id, held, r.gpu_count AS granted
