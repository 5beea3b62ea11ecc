// Which live reservations hold these GPUs (explains a Conflict).
// @read
// @param now float
// @param uuids list<string>
// @row uuid string, reservation string, holder string, priority int, preemptible bool
MATCH (r:Reservation)-[:HOLDS]->(g:GPU)
WHERE g.uuid IN $uuids AND g.reservation = r.id AND r.state = 'active' AND r.expires_at >= $now
RETURN g.uuid AS uuid, r.id AS reservation, r.holder AS holder, r.priority AS priority,
       r.preemptible AS preemptible
