// Ends a live reservation (released or preempted) and frees the GPUs it still holds, with
// the counters, in one statement. Returns no row when it is not live (already ended).
MATCH (r:Reservation {id: $id})
WHERE r.state = 'active'
SET r.state = $state, r.ended_at = $now
WITH r
MATCH (r)-[:HOLDS]->(g:GPU)
WHERE g.reservation = r.id
SET g.state = 'free', g.reservation = NULL, g.lease_expires_at = NULL
WITH r, g
MATCH (h:Host)-[:HAS_GPU]->(g)
WITH r.id AS carry, collect(DISTINCT h) AS hosts
//@include recount_tail
RETURN carry AS id
