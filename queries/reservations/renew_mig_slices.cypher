// Extends a live, unexpired lease on a reservation of MIG slices, only while it still owns
// every slice it was granted (a slice the host stopped reporting, or one taken over after the
// lease lapsed, ends the renewals: the holder must stop). Locks the slices (uuid order), then
// the reservation, before reading, as renew_reservation does for GPUs.
// The lease: $ttl_s, else the one last granted (renew_lease).
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
WITH r, slices AS leased
//@include renew_lease
RETURN r.id AS id, size(leased) AS slices
