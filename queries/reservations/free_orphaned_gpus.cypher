// Frees GPUs still marked reserved for a reservation that has ended (at most $limit), with the
// counters. A safety net (the lease job's, every minute): release, expiry and preemption read a
// reservation's GPUs again after its lock, so a grow committing between their first read and
// their locks (Neo4j) no longer leaves GPUs marked for the ended reservation; should a missed
// path ever do so, this gives them back. An ended reservation never becomes live again, so
// locking the GPUs (then their counters) is enough.
// @write
// @param limit int
// @row freed any
MATCH (g:GPU)
WHERE g.state = 'reserved' AND g.reservation IS NOT NULL
OPTIONAL MATCH (r:Reservation {id: g.reservation})
WITH g, r
WHERE r IS NULL OR r.state <> 'active'
WITH g
ORDER BY g.uuid
LIMIT $limit
SET g:GPU //@lock
WITH collect(g) AS gpus, null AS keep
//@include lock_counters
UNWIND (CASE WHEN size(gpus) = 0 THEN [null] ELSE gpus END) AS g
OPTIONAL MATCH (r:Reservation {id: g.reservation})
WITH g, r
WHERE g IS NOT NULL AND g.state = 'reserved' AND (r IS NULL OR r.state <> 'active')
OPTIONAL MATCH (r)-[link:HOLDS]->(g)
DELETE link
SET g.state = 'free', g.reservation = NULL, g.lease_expires_at = NULL
WITH DISTINCT g
MATCH (h:Host)-[:HAS_GPU]->(g)
WITH collect(g.uuid) AS carry, collect(DISTINCT h) AS hosts
//@include recount_tail
RETURN carry AS freed
