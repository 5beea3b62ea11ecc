// A holder's progress report, sent with a renew: when it last checkpointed and, optionally,
// how often it does. Touches only the reservation (no GPU or counter changes), locked first.
// @write
// @param checkpoint_every_s any
// @param id string
// @param last_checkpoint_at any
// @row id any
MATCH (r:Reservation {id: $id})
SET r:Reservation //@lock
WITH r
WHERE r.state = 'active'
SET r.last_checkpoint_at = $last_checkpoint_at,
    r.checkpoint_every_s = coalesce($checkpoint_every_s, r.checkpoint_every_s)
RETURN r.id AS id
