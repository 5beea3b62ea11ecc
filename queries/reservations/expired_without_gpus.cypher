// Ends lapsed reservations that no longer own any GPU (all taken over); nothing to free.
// Locks each candidate before checking it again (a release, or a renew of MIG slices, which hold
// no GPU, may have changed it meanwhile). The candidates pass through a list before the lock, so
// that the check after it reads the committed state: Neo4j caches the properties a statement read
// for a variable and reads them from that cache later in the statement, even after a lock; a
// variable unwound from a list is new, read afresh (without it, a release that committed while this
// statement waited for the lock went unseen, and both ended the reservation: CI, 2026-12-04).
// `ended_at` is the lease's end, not this run's time: what readers saw from that moment on.
// @write
// @param limit int
// @param now float
// @row ids list<string>
MATCH (r:Reservation)
WHERE r.state = 'active' AND r.expires_at < $now
WITH r
ORDER BY r.id
WITH collect(r) AS candidates
UNWIND candidates AS r
SET r:Reservation //@lock
WITH r
WHERE r.state = 'active' AND r.expires_at < $now
OPTIONAL MATCH (r)-[:HOLDS]->(g:GPU)
WITH r, count(CASE WHEN g.reservation = r.id THEN 1 END) AS held
WHERE held = 0
WITH r
ORDER BY r.id
LIMIT $limit
SET r.state = 'expired', r.ended_at = r.expires_at
RETURN collect(r.id) AS ids
