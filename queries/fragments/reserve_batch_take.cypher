// Fragment (not a query): how reserve_in_host_batch and reserve_in_host_batch_scan take their
// candidates. In: rows of (`h`, `want`): the candidate hosts and their free counts, a host
// possibly in several rows (see reserve_in_host_batch); `$requests`, `$models`. Under Neo4j's
// read committed isolation a host another transaction changed mid-read can be seen under two
// counts, so hosts are grouped by node (`min(want)`), never by (host, count): grouped by both,
// such a host's GPUs made two groups and two requests of one batch were handed the same GPUs (a
// CI storm on Neo4j, fixed in stop 34). Should a GPU still reach two requests (a GPU in two
// NVLink domains), neither request is served (`shared`): they go on alone. Then their free GPUs
// of the accepted models grouped by NVLink domain, coolest first, the groups in best-fit order
// (ties by host name, then the group's lowest GPU index: one order whatever the store's plan).
// Then the requests are served in order: each takes the next `n` untaken GPUs of the first group
// that still has them and whose link class suffices (`link`: 0 none, 1 one NVLink domain, 2 a
// switched domain: any members form a full mesh), so the batch never hands a GPU out twice and
// small requests pack together. Locks as everywhere (all the GPUs of the batch by uuid, then their
// counters), then each request checks its own GPUs' states: one whose GPUs another transaction
// took gets no reservation (it retries on its own), the others commit. Counters move by deltas.
// Out: one row: the ids created and, in the same order, each one's properties as stored and the
// GPUs it took as [uuid, index, model, host, rack, scalable_unit] lists (what reservation_get
// would read back, so the caller answers without a second round trip).
// Cost (FalkorDB copies a row's list values from one clause to the next): what crosses the lock
// and counter fragments is kept small. The plan goes through the locks as one int per GPU (which
// request takes it), not as lists of nodes per request; the stale HOLDS edges (an ended
// reservation's) are found from the GPU without a label test (only reservations hold GPUs) and
// deleted before the new ones are made (any edge into a GPU that is free is stale): traversing
// HOLDS after this statement created edges cost FalkorDB ~1.3 ms more per batch of 16. The
// requests' sizes and link classes are read out of `$requests` once (`wants`): FalkorDB copies a
// map parameter's whole value to read one field, and the assignment read two per request and
// group (its projection 0.21 -> 0.12 ms for six requests).
// Traversals from bound nodes name no label at an end the schema allows one label at (a label test
// per row on FalkorDB; docs/store.md, "No label test the schema already makes").
WITH h, min(want) AS want
MATCH (h)-[:HAS_GPU]->(g)
WHERE g.state = 'free' AND g.model IN $models AND NOT toLower(coalesce(g.health, 'ok')) IN ['failed', 'degraded']
  AND NOT coalesce(g.mig_mode, false)
OPTIONAL MATCH (g)-[:IN_DOMAIN]->(d)
WITH h, want, d, g
ORDER BY h.name, coalesce(g.temperature_c, 50.0), g.index
WITH h, want, d, collect(g) AS members, min(g.index) AS first
WITH h, want, members, first,
     CASE WHEN d IS NULL THEN 0 WHEN d.kind IN ['nvswitch', 'fabric-clique'] THEN 2 ELSE 1 END AS link
ORDER BY want, size(members), h.name, first
WITH collect(members) AS groups, collect(link) AS links, [q IN $requests | [q.n, q.link]] AS wants
WITH groups, wants, reduce(acc = [[x IN groups | 0], []], k IN range(0, size(wants) - 1) |
  reduce(a = acc, sel IN [head([j IN range(0, size(groups) - 1)
                                WHERE links[j] >= wants[k][1]
                                  AND size(groups[j]) - acc[0][j] >= wants[k][0]] + [-1])] |
    [[j IN range(0, size(groups) - 1) | CASE WHEN j = sel THEN a[0][j] + wants[k][0] ELSE a[0][j] END],
     a[1] + [[k, sel, CASE WHEN sel < 0 THEN 0 ELSE a[0][sel] END]]]))[1] AS chosen
WITH [c IN chosen WHERE c[1] >= 0 | [c[0], groups[c[1]][c[2]..c[2] + wants[c[0]][0]]]] AS picks
UNWIND picks AS pick
UNWIND pick[1] AS g
WITH pick[0] AS owner, g
ORDER BY g.uuid
SET g:GPU //@lock
WITH collect(g) AS gpus, collect(owner) AS keep
//@include lock_counters
UNWIND range(0, size(gpus) - 1) AS k
WITH gpus[k] AS g, collect(keep[k]) AS owners
UNWIND owners AS i
WITH i, collect(g) AS gpus, max(size(owners)) AS shared
WHERE size(gpus) > 0 AND shared = 1 AND all(x IN gpus WHERE x.state = 'free')
UNWIND gpus AS x
OPTIONAL MATCH (x)<-[stale:HOLDS]-()
DELETE stale
WITH DISTINCT i, gpus
WITH $requests[i].props AS props, gpus
CREATE (r:Reservation)
SET r += props, r.gpu_count = size(gpus), r.held_uuids = [x IN gpus | x.uuid]
FOREACH (x IN gpus |
  SET x.state = 'reserved', x.reservation = props.id, x.lease_expires_at = props.expires_at
  CREATE (r)-[:HOLDS]->(x))
WITH collect(r) AS carry, collect(gpus) AS taken
WITH carry, reduce(m = [], s IN taken | m + s) AS moved, -1 AS sign
//@include delta_tail
UNWIND carry AS r
MATCH (r)-[:HOLDS]->(x)<-[:HAS_GPU]-(h)
WITH r, collect([x.uuid, x.index, x.model, h.name, h.rack, h.scalable_unit]) AS held
RETURN collect(r.id) AS ids, collect(properties(r)) AS reservations, collect(held) AS taken
