// Match and take in one statement: $n GPUs of one host (the common single-host shape), or
// nothing and no row. Candidates are read like placement_hosts_by_free (index seeks on the
// host free counter, best fit first, $scan hosts at most; a first streaming pass that stops after
// $scan hosts bounds the counts the sorted second pass reads, as in reserve_in_host_batch); in
// each host the free GPUs of the
// accepted models ($models: exact names) are grouped by NVLink domain, coolest first. A group
// qualifies by $mode: 'none' any group, 'any' a real NVLink domain, 'full-mesh' a switched one
// (NVSwitch or fabric clique: any members form a full mesh). Of the equally good groups (the
// best fit: the fewest free GPUs on their host; at most $k) the statement takes number $slot
// (modulo their count), so concurrent reserves spread over them instead of all racing for one. Then the
// same lock-first order as reserve_gpus (GPUs by uuid, then their counters, see
// fragments/lock_counters), a fresh look at the states, the stale HOLDS edges of ended
// reservations deleted before the new ones are made, and counters moved by deltas.
// @write
// @param exclude list<string>
// @param first_size int
// @param k int
// @param last_size int
// @param mode string
// @param model string
// @param models list<string>
// @param n int
// @param now float
// @param props map
// @param scan int
// @param slot int
// @param stale_before float
// @row id any
UNWIND range($first_size, $last_size) AS want
MATCH (h:Host)
WHERE h.free_gpus = want AND NOT h.name IN $exclude AND toLower(coalesce(h.gpu_model, '')) CONTAINS $model
  AND coalesce(h.received_at, $now) >= $stale_before
WITH want
LIMIT $scan
WITH max(want) AS most
UNWIND range($first_size, coalesce(most, $first_size - 1)) AS want
MATCH (h:Host)
WHERE h.free_gpus = want AND NOT h.name IN $exclude AND toLower(coalesce(h.gpu_model, '')) CONTAINS $model
  AND coalesce(h.received_at, $now) >= $stale_before
WITH h, want
ORDER BY want, h.name
LIMIT $scan
MATCH (h)-[:HAS_GPU]->(g:GPU)
WHERE g.state = 'free' AND g.model IN $models AND NOT toLower(coalesce(g.health, 'ok')) IN ['failed', 'degraded']
  AND NOT coalesce(g.mig_mode, false)
OPTIONAL MATCH (g)-[:IN_DOMAIN]->(d:NVLinkDomain)
WITH h, want, d, g
ORDER BY h.name, coalesce(g.temperature_c, 50.0), g.index
WITH h, want, d, collect(g) AS members
WHERE size(members) >= $n
  AND ($mode = 'none' OR (d IS NOT NULL AND ($mode = 'any' OR d.kind IN ['nvswitch', 'fabric-clique'])))
WITH h, want, members
ORDER BY want, size(members), h.name
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
SET r += $props, r.gpu_count = size(gpus)
FOREACH (x IN gpus |
  SET x.state = 'reserved', x.reservation = $props.id, x.lease_expires_at = $props.expires_at
  MERGE (r)-[:HOLDS]->(x))
WITH r.id AS carry, gpus AS moved, -1 AS sign
//@include delta_tail
RETURN carry AS id
