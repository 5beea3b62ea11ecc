// Ends a live reservation (released or preempted) and frees the GPUs it still holds, with
// the counters, in one statement. Returns no row when it is not live (already ended) or
// holds no GPU any more (then end_empty_reservation ends it). Locks the GPUs it may free
// (uuid order), their counters, then the reservation, before it reads state (see
// reserve_gpus): a concurrent expiry or takeover is seen, never overwritten. The GPUs are read
// again after the reservation's lock: a grow (resize, replacement) that committed between the
// first read and the locks added GPUs this statement did not lock, so it writes nothing and
// returns no row (the caller reads again) rather than leave them marked for an ended reservation.
// A reservation whose lease ran out before it ends is ended as `expired` at its lease's end (as the
// reaper would, and as readers already see it: service.as_seen), whatever $state asks.
// @write
// @param id string
// @param now float
// @param state string
// @row id string
MATCH (r:Reservation {id: $id})-[:HOLDS]->(g:GPU)
WITH g
ORDER BY g.uuid
SET g:GPU //@lock
WITH collect(g) AS gpus, null AS keep
//@include lock_counters
MATCH (r:Reservation {id: $id})
SET r:Reservation //@lock
WITH r, gpus
OPTIONAL MATCH (r)-[:HOLDS]->(now:GPU)
WITH r, gpus, collect(CASE WHEN now.reservation = r.id THEN now.uuid END) AS held
WITH r, gpus, size([u IN held WHERE NOT u IN [x IN gpus | x.uuid]]) AS unlocked
WITH r, [x IN gpus WHERE x.reservation = r.id] AS owned, unlocked
WHERE r.state = 'active' AND size(owned) > 0 AND unlocked = 0
SET r.state = CASE WHEN r.expires_at < $now THEN 'expired' ELSE $state END,
    r.ended_at = CASE WHEN r.expires_at < $now THEN r.expires_at ELSE $now END
WITH r, owned, [x IN owned WHERE x.state <> 'free'] AS moved
FOREACH (x IN owned | SET x.state = 'free', x.reservation = NULL, x.lease_expires_at = NULL)
WITH r.id AS carry, moved, 1 AS sign
//@include delta_tail
RETURN carry AS id
