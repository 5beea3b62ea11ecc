// Fragment (not a query): how reserve_in_host and reserve_in_host_scan take their request.
// In: rows of (`h`, `want`): the candidate hosts in best-fit order (`want`: free count, then
// name), at most $scan. In each host the free GPUs of the accepted models ($models: exact names)
// are grouped by NVLink domain, coolest first. A group qualifies by $mode: 'none' any group,
// 'any' a real NVLink domain, 'full-mesh' a switched one (NVSwitch or fabric clique: any members
// form a full mesh). Of the equally good groups (the best fit: the fewest free GPUs on their
// host; at most $k; ties by host name, then the group's lowest GPU index, so the order is the
// same whatever the store's plan) the statement takes number $slot (modulo their count), so concurrent
// reserves spread over them instead of all racing for one. Then the same lock-first order as
// reserve_gpus (GPUs by uuid, then their counters, see fragments/lock_counters), a fresh look at
// the states, the stale HOLDS edges of ended reservations deleted before the new ones are made,
// and counters moved by deltas. Out: one row with the new reservation's id, the reservation as
// stored and the GPUs it holds (as reserve_gpus answers: nothing read back), or none.
// Traversals from bound nodes name no label at an end the schema allows one label at (a label test
// per row on FalkorDB; docs/store.md, "No label test the schema already makes").
MATCH (h)-[:HAS_GPU]->(g)
WHERE g.state = 'free' AND g.model IN $models AND NOT toLower(coalesce(g.health, 'ok')) IN ['failed', 'degraded']
  AND NOT coalesce(g.mig_mode, false)
OPTIONAL MATCH (g)-[:IN_DOMAIN]->(d)
WITH h, want, d, g
ORDER BY h.name, coalesce(g.temperature_c, 50.0), g.index
WITH h, want, d, collect(g) AS members, min(g.index) AS first
WHERE size(members) >= $n
  AND ($mode = 'none' OR (d IS NOT NULL AND ($mode = 'any' OR d.kind IN ['nvswitch', 'fabric-clique'])))
WITH h, want, members, first
ORDER BY want, size(members), h.name, first
WITH collect(want) AS wants, collect(members[0..$n]) AS picks
WHERE size(picks) > 0
WITH picks, [i IN range(0, size(picks) - 1) WHERE wants[i] = wants[0]][0..$k] AS best
UNWIND picks[best[$slot % size(best)]] AS g
WITH g
ORDER BY g.uuid
SET g:GPU //@lock
WITH collect(g) AS gpus, null AS keep
//@include lock_counters
WITH gpus
WHERE size(gpus) = $n AND all(x IN gpus WHERE x.state = 'free')
UNWIND gpus AS x
OPTIONAL MATCH (x)<-[stale:HOLDS]-()
DELETE stale
WITH DISTINCT gpus
CREATE (r:Reservation)
SET r += $props, r.gpu_count = size(gpus), r.held_uuids = [x IN gpus | x.uuid]
FOREACH (x IN gpus |
  SET x.state = 'reserved', x.reservation = $props.id, x.lease_expires_at = $props.expires_at
  MERGE (r)-[:HOLDS]->(x))
WITH r AS carry, gpus AS moved, -1 AS sign
//@include delta_tail
MATCH (carry)-[:HOLDS]->(x)
OPTIONAL MATCH (x)<-[:HAS_GPU]-(h)
WITH carry, collect([x.uuid, x.index, x.model, h.name, h.rack, h.scalable_unit]) AS held
RETURN carry.id AS id, properties(carry) AS reservation, held AS taken
