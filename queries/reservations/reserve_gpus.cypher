// Reserves exactly these GPUs for a new reservation, or writes nothing and returns no row.
// Locks first, in the one global order (GPUs by uuid, then the counters they feed: see
// fragments/lock_counters), and only then reads the states it decides on, so under Neo4j's
// read committed isolation two reservations cannot both take a GPU, cannot write a stale
// counter, and cannot deadlock. FalkorDB runs the statement as one atomic write. A GPU whose
// hold has expired counts as free (even before the lease reaper has run).
// @write
// @param now float
// @param props map
// @param uuids list<string>
// @row id string
MATCH (g:GPU)
WHERE g.uuid IN $uuids
WITH g
ORDER BY g.uuid
SET g:GPU //@lock
WITH collect(g) AS gpus, null AS keep
//@include lock_counters
WITH gpus
WHERE size(gpus) = size($uuids) AND all(x IN gpus WHERE x.state = 'free' OR coalesce(x.lease_expires_at, 0.0) < $now)
WITH gpus, [x IN gpus WHERE x.state = 'free'] AS moved
CREATE (r:Reservation)
SET r += $props
FOREACH (x IN gpus |
  SET x.state = 'reserved', x.reservation = $props.id, x.lease_expires_at = $props.expires_at
  MERGE (r)-[:HOLDS]->(x))
WITH r, gpus, moved
UNWIND gpus AS x
OPTIONAL MATCH (old:Reservation)-[stale:HOLDS]->(x)
WHERE old.id <> $props.id
DELETE stale
WITH DISTINCT r.id AS carry, moved, -1 AS sign
//@include delta_tail
RETURN carry AS id
