// Ends a live reservation that no longer holds any GPU (every one was taken over after its
// lease lapsed). No GPU changes, so no counters move.
MATCH (r:Reservation {id: $id})
WHERE r.state = 'active'
SET r.state = $state, r.ended_at = $now
RETURN r.id AS id
