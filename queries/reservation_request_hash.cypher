// The digest of the request an idempotency key was first used with (null for reservations
// made before it was stored): a reuse with a different request is refused, not answered
// with the old reservation.
// @read
// @param key string
// @row request_hash string?
MATCH (r:Reservation {idempotency_key: $key})
RETURN r.request_hash AS request_hash
