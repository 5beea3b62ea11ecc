// A live reservation's current phase label and its plan of phases ("label=request" strings).
// Touches only the reservation (no GPU or counter changes), locked before it is read.
// @write
// @param id string
// @param phase any
// @param phases any
// @row id any
MATCH (r:Reservation {id: $id})
SET r:Reservation //@lock
WITH r
WHERE r.state = 'active'
SET r.phase = $phase, r.phases = $phases
RETURN r.id AS id
