// The lease reaper: ends up to $limit reservations whose lease ran out and that still hold
// GPUs, frees those GPUs, and moves the counters, in one statement. Lapsed reservations
// holding nothing (all taken over) are ended by expired_without_gpus. Candidates are found
// without locks; then their GPUs (uuid order), the counters and the reservations are locked
// and the lapse is checked again, so a renew or release that committed meanwhile wins. Each
// reservation's GPUs are read again after its lock: one that a grow gave GPUs this statement
// did not lock is left for the next run (it stays lapsed), never ended with GPUs still marked.
// `ended_at` is the lease's end, not this run's time: what readers saw from that moment on.
// Counters move by deltas (delta_tail, as a release's), which keeps the row when the GPUs of the
// reservations it ended were all taken over between its first read and its locks (Neo4j): the
// recount tail it used unwound no host then, and the ids it ended were lost with their events.
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
SET g:GPU //@lock
WITH collect(g) AS gpus, candidates AS keep
//@include lock_counters
UNWIND keep AS r
WITH gpus, r
ORDER BY r.id
SET r:Reservation //@lock
WITH gpus, r
OPTIONAL MATCH (r)-[:HOLDS]->(now:GPU)
WITH gpus, r, collect(CASE WHEN now.reservation = r.id THEN now.uuid END) AS held
WITH gpus, r, size([u IN held WHERE NOT u IN [x IN gpus | x.uuid]]) AS unlocked
WHERE r.state = 'active' AND r.expires_at < $now AND unlocked = 0
SET r.state = 'expired', r.ended_at = r.expires_at
WITH gpus, collect(r) AS ended
WITH ended, [x IN gpus WHERE x.reservation IN [e IN ended | e.id]] AS freed
WITH ended, freed, [x IN freed WHERE x.state <> 'free'] AS moved
FOREACH (x IN freed | SET x.state = 'free', x.reservation = NULL, x.lease_expires_at = NULL)
WITH [x IN ended | x.id] AS carry, moved, 1 AS sign
//@include delta_tail
RETURN carry AS ids
