// The lease reaper: ends up to $limit reservations whose lease ran out and that still hold
// GPUs, frees those GPUs, and moves the counters, in one statement. Lapsed reservations
// holding nothing (all taken over) are ended by expired_without_gpus.
MATCH (r:Reservation)-[:HOLDS]->(held:GPU)
WHERE r.state = 'active' AND r.expires_at < $now AND held.reservation = r.id
WITH DISTINCT r
LIMIT $limit
SET r.state = 'expired', r.ended_at = $now
WITH collect(r) AS ended
UNWIND ended AS r
MATCH (r)-[:HOLDS]->(g:GPU)
WHERE g.reservation = r.id
SET g.state = 'free', g.reservation = NULL, g.lease_expires_at = NULL
WITH ended, g
MATCH (h:Host)-[:HAS_GPU]->(g)
WITH [x IN ended | x.id] AS carry, collect(DISTINCT h) AS hosts
//@include recount_tail
RETURN carry AS ids
