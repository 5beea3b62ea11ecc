// Ends lapsed reservations that no longer own any GPU (all taken over); nothing to free.
// Locks each candidate before checking it again (a renew cannot succeed without GPUs, but a
// release may have ended it meanwhile).
// `ended_at` is the lease's end, not this run's time: what readers saw from that moment on.
// @write
// @param limit int
// @param now float
// @row ids list<string>
MATCH (r:Reservation)
WHERE r.state = 'active' AND r.expires_at < $now
WITH r
ORDER BY r.id
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
