// Fragment (not a query): how release_batch and reserve_release_batch end a batch of
// reservations. Ends the live reservations among $ids and frees the GPUs each still holds. The
// same lock order as every write: all their GPUs by uuid, the counters those feed, then the
// reservations by id; only then are states read. Counters move by deltas. In: `$ids`, `$now`,
// `$state`. Out: one row per reservation ended, (`r`, `held`): the reservation as left and the GPUs
// it holds as [uuid, index, model, host, rack, scalable_unit] lists (what reservation_get would
// read back, so the caller answers without a second round trip), none when it ended none. An id
// not among them (already ended, unknown, holding nothing any more, or grown after the first
// read: GPUs read again after its lock that were not locked here) is answered by
// release_reservation and end_empty_reservation on their own.
// The check that a reservation holds no GPU the first read did not lock (it grew in between) is a
// lock block: a store that runs writes one at a time leaves it out, as no write can come between
// the two reads there (FalkorDB: a batch of six 2.07 -> 1.75 ms; docs/benchmarks.md, "Stop 52").
// A reservation whose lease ran out before it ends is ended as `expired` at its lease's end (as the
// reaper would, and as readers already see it: service.as_seen), whatever $state asks.
// Traversals from bound nodes name no label at an end the schema allows one label at (a label test
// per row on FalkorDB; docs/store.md, "No label test the schema already makes").
MATCH (r:Reservation)-[:HOLDS]->(g)
WHERE r.id IN $ids
WITH DISTINCT g
ORDER BY g.uuid
SET g:GPU //@lock
WITH collect(g) AS gpus, null AS keep
//@include lock_counters
MATCH (r:Reservation)
WHERE r.id IN $ids
WITH gpus, r
ORDER BY r.id
SET r:Reservation //@lock
WITH r, gpus
//@lock-begin
OPTIONAL MATCH (r)-[:HOLDS]->(now)
WITH r, gpus, collect(CASE WHEN now.reservation = r.id THEN now.uuid END) AS held
WITH r, gpus, held
WHERE size([u IN held WHERE NOT u IN [x IN gpus | x.uuid]]) = 0
//@lock-end
WITH r, [x IN gpus WHERE x.reservation = r.id] AS owned
WHERE r.state = 'active' AND size(owned) > 0
SET r.state = CASE WHEN r.expires_at < $now THEN 'expired' ELSE $state END,
    r.ended_at = CASE WHEN r.expires_at < $now THEN r.expires_at ELSE $now END
WITH r, owned, [x IN owned WHERE x.state <> 'free'] AS moved
FOREACH (x IN owned | SET x.state = 'free', x.reservation = NULL, x.lease_expires_at = NULL)
WITH collect(r) AS carry, collect(moved) AS freed
WITH carry, reduce(m = [], s IN freed | m + s) AS moved, 1 AS sign
//@include delta_tail
UNWIND carry AS r
OPTIONAL MATCH (r)-[:HOLDS]->(x)<-[:HAS_GPU]-(xh)
WITH r, collect(CASE WHEN x IS NULL THEN NULL ELSE [x.uuid, x.index, x.model, xh.name, xh.rack, xh.scalable_unit] END) AS held
