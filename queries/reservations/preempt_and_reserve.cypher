// Preemption in one statement: ends the named victim reservations (live, preemptible and of
// lower priority), frees their GPUs, and reserves exactly $uuids for the new reservation,
// with the counters. Writes nothing and returns no row if any condition fails (a victim
// ended or was renewed away, a GPU is held by someone else). Locks as in reserve_gpus.
MATCH (g:GPU)
WHERE g.uuid IN $uuids
WITH g
ORDER BY g.uuid
SET g.lock_token = $props.id
WITH collect(g) AS gpus
OPTIONAL MATCH (v:Reservation)
WHERE v.id IN $victims AND v.state = 'active' AND v.preemptible = true AND v.priority < $props.priority
WITH gpus, collect(v) AS victims, collect(v.id) AS victim_ids
WHERE size(gpus) = size($uuids) AND size(victims) = size($victims)
  AND all(x IN gpus WHERE x.state = 'free' OR coalesce(x.lease_expires_at, 0.0) < $now OR x.reservation IN victim_ids)
FOREACH (v IN victims | SET v.state = 'preempted', v.ended_at = $now)
WITH gpus, victims
UNWIND victims AS v
OPTIONAL MATCH (v)-[:HOLDS]->(vg:GPU)
WHERE vg.reservation = v.id
FOREACH (x IN CASE WHEN vg IS NULL THEN [] ELSE [vg] END |
  SET x.state = 'free', x.reservation = NULL, x.lease_expires_at = NULL)
WITH gpus, collect(DISTINCT vg) AS freed
CREATE (r:Reservation)
SET r += $props
FOREACH (x IN gpus |
  SET x.state = 'reserved', x.reservation = $props.id, x.lease_expires_at = $props.expires_at
  MERGE (r)-[:HOLDS]->(x))
WITH r, gpus + freed AS touched
UNWIND touched AS x
OPTIONAL MATCH (old:Reservation)-[stale:HOLDS]->(x)
WHERE old.id <> $props.id AND x.reservation = $props.id
DELETE stale
WITH DISTINCT r, x
MATCH (h:Host)-[:HAS_GPU]->(x)
WITH r.id AS carry, collect(DISTINCT h) AS hosts
//@include recount_tail
RETURN carry AS id
