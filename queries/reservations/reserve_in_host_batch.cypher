// Group commit of reserve_in_host: several single-host requests ($requests, in arrival order)
// matched and taken in one statement (one transaction), each with its own answer. Each request
// reads its candidates like reserve_in_host (best fit first, at most `scan` hosts); then the
// requests are served in order, each taking the first candidate group that still has `n`
// GPUs no earlier request of the batch took (coolest first), so the batch never hands a GPU
// out twice. Locks as everywhere (all the GPUs of the batch by uuid, then their counters),
// then each request checks its own GPUs' states: a request whose GPUs another transaction took
// gets no reservation (it retries on its own), the others commit. Counters move by deltas.
// Returns one row: the ids created.
UNWIND range(0, size($requests) - 1) AS i
UNWIND range($requests[i].n, 128) AS want
MATCH (h:Host)
WHERE h.free_gpus = want AND NOT h.name IN $requests[i].exclude
  AND toLower(coalesce(h.gpu_model, '')) CONTAINS $requests[i].model
  AND coalesce(h.received_at, $now) >= $requests[i].stale_before
WITH i, h, want
ORDER BY i, want, h.name
WITH i, collect(h) AS hosts, collect(want) AS wants
WITH i, hosts[0..$requests[i].scan] AS hosts, wants[0..$requests[i].scan] AS wants
UNWIND range(0, size(hosts) - 1) AS j
WITH i, hosts[j] AS h, wants[j] AS want
MATCH (h)-[:HAS_GPU]->(g:GPU)
WHERE g.state = 'free' AND g.model IN $requests[i].models
  AND NOT toLower(coalesce(g.health, 'ok')) IN ['failed', 'degraded']
OPTIONAL MATCH (g)-[:IN_DOMAIN]->(d:NVLinkDomain)
WITH i, h, want, d, g
ORDER BY i, h.name, coalesce(g.temperature_c, 50.0), g.index
WITH i, h, want, d, collect(g) AS members
WHERE size(members) >= $requests[i].n
  AND ($requests[i].mode = 'none'
       OR (d IS NOT NULL AND ($requests[i].mode = 'any' OR d.kind IN ['nvswitch', 'fabric-clique'])))
WITH i, h, want, members
ORDER BY i, want, size(members), h.name
WITH i, collect(members) AS options
ORDER BY i
WITH collect(i) AS asked, collect(options) AS choices
WITH asked, reduce(picks = [], k IN range(0, size(asked) - 1) |
  picks + [head([p IN [o IN choices[k] | [x IN o WHERE NOT x IN reduce(u = [], q IN picks | u + q)][0..$requests[asked[k]].n]]
                 WHERE size(p) = $requests[asked[k]].n] + [[]])]) AS chosen
WITH [k IN range(0, size(asked) - 1) | [asked[k], chosen[k]]] AS picks
UNWIND picks AS pick
UNWIND pick[1] AS g
WITH picks, g
ORDER BY g.uuid
SET g:GPU
WITH collect(g) AS gpus, picks AS keep
//@include lock_counters
WITH keep AS picks
UNWIND picks AS pick
WITH pick[0] AS i, pick[1] AS gpus
WHERE size(gpus) > 0 AND all(x IN gpus WHERE x.state = 'free')
WITH $requests[i].props AS props, gpus
CREATE (r:Reservation)
SET r += props, r.gpu_count = size(gpus)
FOREACH (x IN gpus |
  SET x.state = 'reserved', x.reservation = props.id, x.lease_expires_at = props.expires_at
  MERGE (r)-[:HOLDS]->(x))
WITH r, gpus
UNWIND gpus AS x
OPTIONAL MATCH (old:Reservation)-[stale:HOLDS]->(x)
WHERE old.id <> r.id
DELETE stale
WITH DISTINCT r, gpus
WITH collect(r.id) AS carry, collect(gpus) AS taken
WITH carry, reduce(m = [], s IN taken | m + s) AS moved, -1 AS sign
//@include delta_tail
RETURN carry AS ids
