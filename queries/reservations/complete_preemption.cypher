// Ends a grace period, in one statement: the pending reservation $id takes exactly $uuids,
// the victims of $victims that are still live are preempted and their GPUs freed, with the
// counters. Victims that released (or expired) during the grace period have nothing left to
// free. Writes nothing and returns no row if the pending reservation is gone, a wanted GPU is
// held by anyone but a live victim, or a victim holds GPUs this statement did not lock (it
// grew after the read: read again under the victims' locks). Lock order as in
// preempt_and_reserve: GPUs by uuid, counters, then
// the reservations (victims and the pending one) by id; reads only after.
// A victim whose lease ran out before this ends it is ended as `expired` at its lease's end, as a
// release or the reaper would (and as readers already see it: service.as_seen), not preempted now.
// @write
// @param expires_at any
// @param id string
// @param now float
// @param uuids list<string>
// @param victims any
// @row id any, preempted any
OPTIONAL MATCH (v:Reservation)-[:HOLDS]->(vg:GPU)
WHERE v.id IN $victims AND vg.reservation = v.id
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
WHERE v.id IN $victims OR v.id = $id
WITH gpus, v
ORDER BY v.id
FOREACH (x IN CASE WHEN v IS NULL THEN [] ELSE [v] END | SET x:Reservation) //@lock
WITH gpus, collect(v) AS locked
WITH gpus, [x IN locked WHERE x.id = $id AND x.state = 'pending'] AS mine,
     [x IN locked WHERE x.id IN $victims AND x.state = 'active'] AS live_victims
WITH gpus, mine, live_victims, [x IN live_victims | x.id] AS live_ids, [x IN gpus WHERE x.uuid IN $uuids] AS wanted
// (Counted in projections: see renew_reservation for the FalkorDB quirk this avoids.)
// What the live victims hold now, read after their locks: a victim that grew after the first read
// holds GPUs this statement did not lock. (Against their granted gpu_count, a victim whose host
// stopped reporting one of its GPUs could never be preempted: a probe's case.)
CALL (live_ids) {
  OPTIONAL MATCH (lv:Reservation)-[:HOLDS]->(lg:GPU)
  WHERE lv.id IN live_ids AND lg.reservation = lv.id
  RETURN count(lg) AS victim_holds
}
WITH gpus, mine, live_victims, live_ids, wanted, victim_holds,
     size([x IN wanted WHERE x.state = 'free' OR coalesce(x.lease_expires_at, 0.0) < $now OR x.reservation IN live_ids]) AS takeable,
     size([x IN gpus WHERE x.reservation IN live_ids]) AS victim_held
WHERE size(mine) = 1 AND size(wanted) = size($uuids) AND takeable = size(wanted) AND victim_held = victim_holds
UNWIND mine AS p
FOREACH (x IN live_victims |
  SET x.state = CASE WHEN x.expires_at < $now THEN 'expired' ELSE 'preempted' END,
      x.ended_at = CASE WHEN x.expires_at < $now THEN x.expires_at ELSE $now END)
WITH p, wanted, live_ids, [x IN gpus WHERE x.reservation IN live_ids] AS freed
FOREACH (x IN freed | SET x.state = 'free', x.reservation = NULL, x.lease_expires_at = NULL)
SET p.state = 'active', p.gpu_count = size(wanted), p.expires_at = $expires_at, p.started_at = $now,
    p.held_uuids = [x IN wanted | x.uuid]
FOREACH (x IN wanted |
  SET x.state = 'reserved', x.reservation = p.id, x.lease_expires_at = $expires_at
  MERGE (p)-[:HOLDS]->(x))
WITH p, live_ids, wanted + freed AS touched
UNWIND touched AS x
OPTIONAL MATCH (old:Reservation)-[stale:HOLDS]->(x)
WHERE old.id <> p.id AND x.reservation = p.id
DELETE stale
WITH DISTINCT p, live_ids, x
MATCH (h:Host)-[:HAS_GPU]->(x)
WITH [p.id] + live_ids AS carry, collect(DISTINCT h) AS hosts
//@include recount_tail
RETURN carry[0] AS id, carry[1..] AS preempted
