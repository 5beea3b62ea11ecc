// Test only: the request digest stored with an idempotency key replaced, as a reservation made
// before a change of the digest stored it (a retry across that deploy must still match).
// @write
// @param hash string
// @param key string
// @row id string
MATCH (r:Reservation {idempotency_key: $key})
SET r.request_hash = $hash
RETURN r.id AS id
