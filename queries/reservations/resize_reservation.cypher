// Resizes a live reservation in one statement: frees the GPUs in $remove (which it must own)
// and takes the GPUs in $add (which must be free, or their hold lapsed), with the counters,
// or writes nothing and returns no row. Also the write behind failed-GPU replacement (both
// lists at once). Locks in the global order (see reserve_gpus): the reservation's GPUs and the
// added ones by uuid, their counters, then the reservation; only then reads what it decides
// on. It goes on only while the reservation is live and still owns every GPU it was granted,
// so a resize racing an expiry, a release or a preemption either runs first or sees it ended.
// An added GPU must also be healthy, as resize's pool offers it (not failed or degraded,
// placement.select.UNHEALTHY): one that failed between the plan and this write is refused, and
// the caller plans again (a replacement took a GPU that had just failed; a probe's case).
// @write
// @param add any
// @param gpu_count any
// @param id string
// @param now float
// @param rank_order any
// @param remove any
// @row id any
OPTIONAL MATCH (:Reservation {id: $id})-[:HOLDS]->(mine:GPU)
WITH collect(mine.uuid) AS mine_uuids
UNWIND mine_uuids + $add AS u
WITH DISTINCT u
MATCH (g:GPU {uuid: u})
WITH g
ORDER BY g.uuid
SET g:GPU //@lock
WITH collect(g) AS gpus, null AS keep
//@include lock_counters
MATCH (r:Reservation {id: $id})
SET r:Reservation //@lock
// (Counted in projections: see renew_reservation for the FalkorDB quirk this avoids.)
WITH r, gpus, [x IN gpus WHERE x.reservation = r.id] AS owned, [x IN gpus WHERE x.uuid IN $add] AS wanted
WITH r, gpus, owned, wanted, size([x IN owned WHERE x.uuid IN $remove]) AS removable,
     size([x IN wanted WHERE x.reservation IS NULL OR (x.reservation <> r.id AND coalesce(x.lease_expires_at, 0.0) < $now)]) AS takeable,
     size([x IN wanted WHERE x.state = 'free' OR (x.state = 'reserved' AND coalesce(x.lease_expires_at, 0.0) < $now)]) AS free_now,
     size([x IN wanted WHERE NOT toLower(coalesce(x.health, 'ok')) IN ['failed', 'degraded']]) AS healthy
WHERE r.state = 'active' AND r.expires_at >= $now AND size(owned) = r.gpu_count
  AND removable = size($remove) AND size(wanted) = size($add) AND takeable = size($add) AND free_now = size($add)
  AND healthy = size($add)
  AND r.gpu_count - size($remove) + size($add) = $gpu_count
WITH r, owned, wanted, [x IN owned WHERE x.uuid IN $remove] AS freed
FOREACH (x IN freed | SET x.state = 'free', x.reservation = NULL, x.lease_expires_at = NULL)
FOREACH (x IN wanted |
  SET x.state = 'reserved', x.reservation = r.id, x.lease_expires_at = r.expires_at
  MERGE (r)-[:HOLDS]->(x))
SET r.gpu_count = $gpu_count, r.rank_order = $rank_order, r.resized_at = $now,
    r.held_uuids = [u IN coalesce(r.held_uuids, []) WHERE NOT u IN $remove] + [x IN wanted | x.uuid]
WITH r, wanted + freed AS touched
UNWIND (CASE WHEN size(touched) = 0 THEN [null] ELSE touched END) AS x
OPTIONAL MATCH (other:Reservation)-[link:HOLDS]->(x)
WHERE (other.id <> r.id AND x.reservation = r.id) OR (other.id = r.id AND x.reservation IS NULL)
DELETE link
WITH DISTINCT r, x
OPTIONAL MATCH (h:Host)-[:HAS_GPU]->(x)
WITH r.id AS carry, collect(DISTINCT h) AS hosts
//@include recount_tail
RETURN carry AS id
