// Reserves exactly these GPUs for a new reservation, or writes nothing and returns no row.
// Neo4j (read committed): the first SET takes a write lock on every GPU in uuid order, so
// the state read after it is current and two reservations cannot interleave or deadlock.
// FalkorDB runs the statement as one atomic write. A GPU whose hold has expired counts as
// free (even before the lease reaper has run). Counters move in the same statement.
MATCH (g:GPU)
WHERE g.uuid IN $uuids
WITH g
ORDER BY g.uuid
SET g.lock_token = $props.id
WITH collect(g) AS gpus
WHERE size(gpus) = size($uuids) AND all(x IN gpus WHERE x.state = 'free' OR coalesce(x.lease_expires_at, 0.0) < $now)
CREATE (r:Reservation)
SET r += $props
FOREACH (x IN gpus |
  SET x.state = 'reserved', x.reservation = $props.id, x.lease_expires_at = $props.expires_at
  MERGE (r)-[:HOLDS]->(x))
WITH r, gpus
UNWIND gpus AS x
OPTIONAL MATCH (old:Reservation)-[stale:HOLDS]->(x)
WHERE old.id <> $props.id
DELETE stale
WITH DISTINCT r, x
MATCH (h:Host)-[:HAS_GPU]->(x)
WITH r.id AS carry, collect(DISTINCT h) AS hosts
//@include recount_tail
RETURN carry AS id
