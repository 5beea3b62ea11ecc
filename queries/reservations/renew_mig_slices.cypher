// Extends a live, unexpired lease on a reservation of MIG slices, only while it still owns
// every slice it was granted (a slice the host stopped reporting, or one taken over after the
// lease lapsed, ends the renewals: the holder must stop). Locks the slices (uuid order), then
// the reservation, before reading, as renew_reservation does for GPUs.
// The lease as renew_reservation chooses it ($ttl_s, else the one last granted).
// @write
// @param default_ttl_s int
// @param id string
// @param max_ttl_s int
// @param now float
// @param ttl_s int?
// @row id string, slices int
MATCH (r:Reservation {id: $id})-[:HOLDS_SLICE]->(s:MigSlice)
WITH s
ORDER BY s.uuid
SET s:MigSlice //@lock
WITH collect(s) AS slices
MATCH (r:Reservation {id: $id})
SET r:Reservation //@lock
WITH r, slices, size([x IN slices WHERE x.reservation = r.id]) AS owned
WHERE r.state = 'active' AND r.expires_at >= $now AND size(slices) = r.slice_count AND owned = size(slices)
WITH r, slices, toInteger(round(coalesce($ttl_s, r.ttl_s, r.expires_at - coalesce(r.renewed_at, r.created_at), $default_ttl_s))) AS lease
WITH r, slices, CASE WHEN lease < 1 THEN $default_ttl_s WHEN lease > $max_ttl_s THEN $max_ttl_s ELSE lease END AS lease
SET r.expires_at = $now + lease, r.renewed_at = $now, r.ttl_s = lease
FOREACH (x IN slices | SET x.lease_expires_at = $now + lease)
RETURN r.id AS id, size(slices) AS slices
