// Reserves exactly these GPUs for a new reservation, or writes nothing and returns no row: a GPU
// unknown, taken or MIG-enabled (handed out in slices, never whole) takes none. The row is the
// reservation as stored and the GPUs it holds, as reservation_get gives them, so nothing is read
// back (a reserve by uuids was three round trips: the uuids checked, this, the read back); the
// caller reads why only when no row came (gpus_by_uuid, gpu_holders).
// Locks first, in the one global order (GPUs by uuid, then the counters they feed: see
// fragments/lock_counters), and only then reads the states it decides on, so under Neo4j's
// read committed isolation two reservations cannot both take a GPU, cannot write a stale
// counter, and cannot deadlock. FalkorDB runs the statement as one atomic write. A GPU whose
// hold has expired counts as free (even before the lease reaper has run).
// Traversals from bound nodes name no label at an end the schema allows one label at (a label test
// per row on FalkorDB; docs/store.md, "No label test the schema already makes").
// @write
// @param now float
// @param props map
// @param uuids list<string>
// @row id string, reservation map, taken any
MATCH (g:GPU)
WHERE g.uuid IN $uuids
WITH g
ORDER BY g.uuid
SET g:GPU //@lock
WITH collect(g) AS gpus, null AS keep
//@include lock_counters
WITH gpus
WHERE size(gpus) = size($uuids) AND all(x IN gpus WHERE x.state = 'free' OR coalesce(x.lease_expires_at, 0.0) < $now)
  AND all(x IN gpus WHERE NOT coalesce(x.mig_mode, false))
WITH gpus, [x IN gpus WHERE x.state = 'free'] AS moved
CREATE (r:Reservation)
SET r += $props, r.held_uuids = [x IN gpus | x.uuid]
FOREACH (x IN gpus |
  SET x.state = 'reserved', x.reservation = $props.id, x.lease_expires_at = $props.expires_at
  MERGE (r)-[:HOLDS]->(x))
WITH r, gpus, moved
UNWIND gpus AS x
OPTIONAL MATCH (old:Reservation)-[stale:HOLDS]->(x)
WHERE old.id <> $props.id
DELETE stale
WITH DISTINCT r AS carry, moved, -1 AS sign
//@include delta_tail
MATCH (carry)-[:HOLDS]->(x)
OPTIONAL MATCH (x)<-[:HAS_GPU]-(h)
WITH carry, collect([x.uuid, x.index, x.model, h.name, h.rack, h.scalable_unit]) AS held
RETURN carry.id AS id, properties(carry) AS reservation, held AS taken
