// The lease reaper: ends up to $limit reservations whose lease ran out and that still hold
// GPUs, frees those GPUs, and moves the counters, in one statement. Lapsed reservations
// holding nothing (all taken over) are ended by expired_without_gpus. Candidates are found
// without locks; then their GPUs (uuid order), the counters and the reservations are locked
// and the lapse is checked again, so a renew or release that committed meanwhile wins.
// @write
// @param limit int
// @param now float
// @row ids list<string>
MATCH (r:Reservation)-[:HOLDS]->(held:GPU)
WHERE r.state = 'active' AND r.expires_at < $now AND held.reservation = r.id
WITH DISTINCT r
ORDER BY r.expires_at, r.id
LIMIT $limit
WITH collect(r) AS candidates
UNWIND candidates AS r
MATCH (r)-[:HOLDS]->(g:GPU)
WITH DISTINCT candidates, g
ORDER BY g.uuid
SET g:GPU
WITH collect(g) AS gpus, candidates AS keep
//@include lock_counters
UNWIND keep AS r
WITH gpus, r
ORDER BY r.id
SET r:Reservation
WITH gpus, r
WHERE r.state = 'active' AND r.expires_at < $now
SET r.state = 'expired', r.ended_at = $now
WITH gpus, collect(r) AS ended
WITH ended, [x IN gpus WHERE x.reservation IN [e IN ended | e.id]] AS freed
FOREACH (x IN freed | SET x.state = 'free', x.reservation = NULL, x.lease_expires_at = NULL)
WITH ended, freed
UNWIND (CASE WHEN size(freed) = 0 THEN [null] ELSE freed END) AS g
OPTIONAL MATCH (h:Host)-[:HAS_GPU]->(g)
WITH [x IN ended | x.id] AS carry, collect(DISTINCT h) AS hosts
//@include recount_tail
RETURN carry AS ids
