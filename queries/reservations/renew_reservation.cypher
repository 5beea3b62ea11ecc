// Extends a live, unexpired lease on the reservation and its GPUs. No row when it cannot be renewed.
MATCH (r:Reservation {id: $id})
WHERE r.state = 'active' AND r.expires_at >= $now
SET r.expires_at = $expires_at, r.renewed_at = $now
WITH r
OPTIONAL MATCH (r)-[:HOLDS]->(g:GPU)
WHERE g.reservation = r.id
SET g.lease_expires_at = $expires_at
RETURN r.id AS id, count(g) AS gpus
