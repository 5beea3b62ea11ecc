// Extends a live, unexpired lease on the reservation and its GPUs, only while the reservation
// still owns every GPU it was granted. No row when it cannot be renewed: ended, lapsed, or a
// GPU was taken over after the lease lapsed (the holder must stop: another job owns it).
// Locks its GPUs (uuid order) and then the reservation before reading, so a renew racing a
// takeover either extends the lease before the takeover looks, or sees the GPU gone.
// A reservation of MIG slices (slice_count) is renewed by renew_mig_slices instead.
// The row is the reservation as renewed and the GPUs it holds, as reservation_get gives them: a
// read back after the write could see a release that landed in between and answer a renewed
// reservation as `released` (a renew racing a release, found by an adversarial trial).
// The lease: $ttl_s, else the one last granted (renew_lease).
// @write
// @param default_ttl_s int
// @param id string
// @param max_ttl_s int
// @param now float
// @param ttl_s int?
// @row id string, gpus int, reservation map, taken any
MATCH (r:Reservation {id: $id})-[:HOLDS]->(g:GPU)
WITH g
ORDER BY g.uuid
SET g:GPU //@lock
WITH collect(g) AS gpus
MATCH (r:Reservation {id: $id})
SET r:Reservation //@lock
// (Ownership is counted in a projection first: FalkorDB drops every row when a WHERE holds a
// list predicate over a collected list that refers to a node bound in the same WITH.)
WITH r, gpus, size([x IN gpus WHERE x.reservation = r.id]) AS owned
WHERE r.state = 'active' AND r.expires_at >= $now AND size(gpus) = r.gpu_count AND owned = size(gpus)
  AND coalesce(r.slice_count, 0) = 0
WITH r, gpus AS leased
//@include renew_lease
UNWIND leased AS x
OPTIONAL MATCH (x)<-[:HAS_GPU]-(h:Host)
WITH r, collect([x.uuid, x.index, x.model, h.name, h.rack, h.scalable_unit]) AS held
RETURN r.id AS id, size(held) AS gpus, properties(r) AS reservation, held AS taken
