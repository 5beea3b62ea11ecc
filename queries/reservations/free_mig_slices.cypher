// Frees the MIG slices still marked for these reservations once they are not live any more
// (released, preempted, expired): run after the statement that ended them. Locks the slices
// (uuid order), then reads each one's holder; a slice a newer reservation took is left alone.
// Until this runs, such a slice already counts as free (its holder is not live).
// @write
// @param ids list<string>
// @row freed int
MATCH (r:Reservation)-[:HOLDS_SLICE]->(s:MigSlice)
WHERE r.id IN $ids
WITH s
ORDER BY s.uuid
SET s:MigSlice //@lock
WITH s
MATCH (r:Reservation {id: coalesce(s.reservation, '')})
WITH s, CASE WHEN r.id IN $ids AND r.state <> 'active' THEN 1 ELSE 0 END AS ended
WHERE ended = 1
SET s.state = 'free', s.reservation = NULL, s.lease_expires_at = NULL
RETURN count(s) AS freed
