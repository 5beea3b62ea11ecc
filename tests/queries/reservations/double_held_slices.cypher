// Invariant check: MIG slices held by more than one live reservation, or marked for a live
// reservation that does not hold them (must be none).
// @read
// @param now float
// @row uuid string, holders list<string>, marked string?
MATCH (r:Reservation)-[:HOLDS_SLICE]->(s:MigSlice)
WHERE r.state = 'active' AND r.expires_at >= $now
WITH s, collect(r.id) AS holders
WHERE size(holders) > 1 OR NOT s.reservation IN holders
RETURN s.uuid AS uuid, holders, s.reservation AS marked
