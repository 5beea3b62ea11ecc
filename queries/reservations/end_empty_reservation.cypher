// Ends a live reservation that no longer owns any GPU (every one was taken over after its
// lease lapsed). No GPU changes, so no counters move. Locks the reservation before reading.
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
SET r.state = $state, r.ended_at = $now
RETURN r.id AS id
