// Preemption in one statement: ends the named victim reservations (live, preemptible and of
// lower priority), frees their GPUs, and reserves exactly $uuids for the new reservation,
// with the counters. Writes nothing and returns no row if any condition fails (a victim
// ended or was renewed away, a GPU is held by someone else). Locks, in the global order, the
// union of the wanted GPUs and the victims' GPUs, then their counters, then the victims,
// and only then reads what it decides on (see reserve_gpus). The victims' GPUs are read again
// after their locks: a grow that committed in between gave a victim GPUs not locked here, and
// then nothing is written (the caller plans again).
// A victim whose lease ran out before this ends it is ended as `expired` at its lease's end, as a
// release or the reaper would (and as readers already see it: service.as_seen), not preempted now.
// @write
// @param now float
// @param props map
// @param uuids list<string>
// @param victims list<string>
// @row id string
OPTIONAL MATCH (v:Reservation)-[:HOLDS]->(vg:GPU)
WHERE v.id IN $victims
WITH collect(DISTINCT vg.uuid) AS victim_gpus
UNWIND $uuids + victim_gpus AS u
WITH DISTINCT u
MATCH (g:GPU {uuid: u})
WITH g
ORDER BY g.uuid
SET g:GPU //@lock
WITH collect(g) AS gpus, null AS keep
//@include lock_counters
OPTIONAL MATCH (v:Reservation)
WHERE v.id IN $victims
WITH gpus, v
ORDER BY v.id
FOREACH (x IN CASE WHEN v IS NULL THEN [] ELSE [v] END | SET x:Reservation) //@lock
WITH gpus, v
OPTIONAL MATCH (v)-[:HOLDS]->(now:GPU)
WITH gpus, v, collect(CASE WHEN now.reservation = v.id THEN now.uuid END) AS held
WITH gpus, v, size([u IN held WHERE NOT u IN [x IN gpus | x.uuid]]) AS unlocked_here
WITH gpus, collect(v) AS named, toInteger(sum(unlocked_here)) AS unlocked
WHERE unlocked = 0
WITH gpus, [v IN named WHERE v.state = 'active' AND v.preemptible = true AND v.priority < $props.priority] AS victims
WITH gpus, victims, [v IN victims | v.id] AS victim_ids, [x IN gpus WHERE x.uuid IN $uuids] AS wanted
// (Counted in a projection: see renew_reservation for the FalkorDB quirk this avoids.)
WITH gpus, victims, victim_ids, wanted,
     size([x IN wanted WHERE x.state = 'free' OR coalesce(x.lease_expires_at, 0.0) < $now OR x.reservation IN victim_ids]) AS takeable
WHERE size(wanted) = size($uuids) AND size(victims) = size($victims) AND takeable = size(wanted)
FOREACH (v IN victims |
  SET v.state = CASE WHEN v.expires_at < $now THEN 'expired' ELSE 'preempted' END,
      v.ended_at = CASE WHEN v.expires_at < $now THEN v.expires_at ELSE $now END)
WITH gpus, wanted, [x IN gpus WHERE x.reservation IN victim_ids] AS freed
FOREACH (x IN freed | SET x.state = 'free', x.reservation = NULL, x.lease_expires_at = NULL)
CREATE (r:Reservation)
SET r += $props, r.held_uuids = [x IN wanted | x.uuid]
FOREACH (x IN wanted |
  SET x.state = 'reserved', x.reservation = $props.id, x.lease_expires_at = $props.expires_at
  MERGE (r)-[:HOLDS]->(x))
WITH r, wanted + freed AS touched
UNWIND touched AS x
OPTIONAL MATCH (old:Reservation)-[stale:HOLDS]->(x)
WHERE old.id <> $props.id AND x.reservation = $props.id
DELETE stale
WITH DISTINCT r, x
MATCH (h:Host)-[:HAS_GPU]->(x)
WITH r.id AS carry, collect(DISTINCT h) AS hosts
//@include recount_tail
RETURN carry AS id
