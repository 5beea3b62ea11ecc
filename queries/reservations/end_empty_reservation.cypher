// Ends a live reservation that no longer owns any GPU (every one was taken over after its
// lease lapsed). No GPU changes, so no counters move. Locks the reservation before reading.
// A reservation whose lease ran out before it ends is ended as `expired` at its lease's end (as the
// reaper would, and as readers already see it: service.as_seen), whatever $state asks.
// @write
// @param id string
// @param now float
// @param state string
// @row id string
MATCH (r:Reservation {id: $id})
SET r:Reservation //@lock
WITH r
WHERE r.state = 'active'
OPTIONAL MATCH (r)-[:HOLDS]->(g:GPU)
WITH r, count(CASE WHEN g.reservation = r.id THEN 1 END) AS owned
WHERE owned = 0
SET r.state = CASE WHEN r.expires_at < $now THEN 'expired' ELSE $state END,
    r.ended_at = CASE WHEN r.expires_at < $now THEN r.expires_at ELSE $now END
RETURN r.id AS id
