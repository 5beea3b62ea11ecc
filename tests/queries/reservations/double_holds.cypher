// Invariant check: GPUs held by more than one live reservation (must be none).
// @read
// @param now float
// @row uuid string, holders list<string>
MATCH (r:Reservation)-[:HOLDS]->(g:GPU)
WHERE r.state = 'active' AND r.expires_at >= $now
WITH g, collect(r.id) AS holders
WHERE size(holders) > 1
RETURN g.uuid AS uuid, holders
