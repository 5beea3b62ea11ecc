// Group commit of reserve_in_host: several single-host requests ($requests, in arrival order,
// sharing the accepted models, excluded hosts and staleness cut-off) matched and taken in one
// statement (one transaction), each with its own answer. The candidate hosts are read once for
// the batch: for each distinct request size in it ($sizes), the page of at most $scan hosts that
// fit that size best (a subquery per size; one page for the smallest size alone left a batch's
// larger requests no host on a cluster in use, whose best fits for one GPU hold one or two, and
// sent them one by one down the single path). Each page is read in two passes: a first streaming
// pass over the exact free counts stops after $scan hosts, and its largest count bounds the
// sorted second pass, which reads only the hosts whose counts lie within it (all of them when
// most hosts share that count, as on an idle cluster); any order the plan yields rows in gives a
// bound at least the true one, and none seen gives an empty range. Sorting every host with a free
// GPU cost ~1.3 ms more per cycle at 4,096 hosts half reserved, docs/benchmarks.md stop 33.
// Under Neo4j's read committed isolation a count may change between the passes (fewer candidates,
// and the requests not served go on alone) and between two seeks of one statement: a host another
// transaction changed mid-read is seen under two counts (in two size pages, or twice in one), so
// hosts are grouped by node (`min(want)`), never by (host, count): grouped by both, such a host's
// GPUs made two groups and two requests of one batch were handed the same GPUs (a CI storm on
// Neo4j, fixed in stop 34). Should a GPU still reach two requests (a GPU in two NVLink domains),
// neither request is served (`shared`): they go on alone. Then their free GPUs of the accepted
// models grouped by NVLink domain, coolest first, the groups in best-fit order. Then the requests
// are served in order: each takes the next `n` untaken GPUs of the first group that still has them
// and whose link class suffices (`link`: 0 none, 1 one NVLink domain, 2 a switched domain: any
// members form a full mesh), so the batch never hands a GPU out twice and small requests pack
// together. Locks as everywhere (all the GPUs of the batch by uuid, then their counters), then each
// request checks its own GPUs' states: one whose GPUs another transaction took gets no reservation
// (it retries on its own), the others commit. Counters move by deltas.
// Returns one row: the ids created and, in the same order, each one's properties as stored and
// the GPUs it took as [uuid, index, model, host, rack, scalable_unit] lists (what reservation_get
// would read back, so the caller answers without a second round trip).
// Cost (FalkorDB copies a row's list values from one clause to the next): what crosses the lock
// and counter fragments is kept small. The plan goes through the locks as one int per GPU (which
// request takes it), not as lists of nodes per request; the stale HOLDS edges (an ended
// reservation's) are found from the GPU without a label test (only reservations hold GPUs) and
// deleted before the new ones are made (any edge into a GPU that is free is stale): traversing
// HOLDS after this statement created edges cost FalkorDB ~1.3 ms more per batch of 16.
// @write
// @param exclude list<string>
// @param model string
// @param models list<string>
// @param now float
// @param requests list<map>
// @param scan int
// @param sizes list<int>
// @param stale_before float
// @row ids any, reservations any, taken any
UNWIND $sizes AS size
CALL (size) {
  UNWIND range(size, 128) AS want
  MATCH (h:Host)
  WHERE h.free_gpus = want AND NOT h.name IN $exclude AND toLower(coalesce(h.gpu_model, '')) CONTAINS $model
    AND coalesce(h.received_at, $now) >= $stale_before
  WITH size, want
  LIMIT $scan
  WITH size, max(want) AS most
  UNWIND range(size, coalesce(most, size - 1)) AS want
  MATCH (h:Host)
  WHERE h.free_gpus = want AND NOT h.name IN $exclude AND toLower(coalesce(h.gpu_model, '')) CONTAINS $model
    AND coalesce(h.received_at, $now) >= $stale_before
  WITH h, want
  ORDER BY want, h.name
  LIMIT $scan
  RETURN h, want
}
WITH h, min(want) AS want
MATCH (h)-[:HAS_GPU]->(g:GPU)
WHERE g.state = 'free' AND g.model IN $models AND NOT toLower(coalesce(g.health, 'ok')) IN ['failed', 'degraded']
  AND NOT coalesce(g.mig_mode, false)
OPTIONAL MATCH (g)-[:IN_DOMAIN]->(d:NVLinkDomain)
WITH h, want, d, g
ORDER BY h.name, coalesce(g.temperature_c, 50.0), g.index
WITH h, want, d, collect(g) AS members
WITH h, want, members,
     CASE WHEN d IS NULL THEN 0 WHEN d.kind IN ['nvswitch', 'fabric-clique'] THEN 2 ELSE 1 END AS link
ORDER BY want, size(members), h.name
WITH collect(members) AS groups, collect(link) AS links
WITH groups, reduce(acc = [[x IN groups | 0], []], k IN range(0, size($requests) - 1) |
  reduce(a = acc, sel IN [head([j IN range(0, size(groups) - 1)
                                WHERE links[j] >= $requests[k].link
                                  AND size(groups[j]) - acc[0][j] >= $requests[k].n] + [-1])] |
    [[j IN range(0, size(groups) - 1) | CASE WHEN j = sel THEN a[0][j] + $requests[k].n ELSE a[0][j] END],
     a[1] + [[k, sel, CASE WHEN sel < 0 THEN 0 ELSE a[0][sel] END]]]))[1] AS chosen
WITH [c IN chosen WHERE c[1] >= 0 | [c[0], groups[c[1]][c[2]..c[2] + $requests[c[0]].n]]] AS picks
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
SET r += props, r.gpu_count = size(gpus)
FOREACH (x IN gpus |
  SET x.state = 'reserved', x.reservation = props.id, x.lease_expires_at = props.expires_at
  CREATE (r)-[:HOLDS]->(x))
WITH collect(r) AS carry, collect(gpus) AS taken
WITH carry, reduce(m = [], s IN taken | m + s) AS moved, -1 AS sign
//@include delta_tail
UNWIND carry AS r
MATCH (r)-[:HOLDS]->(x:GPU)<-[:HAS_GPU]-(h:Host)
WITH r, collect([x.uuid, x.index, x.model, h.name, h.rack, h.scalable_unit]) AS held
RETURN collect(r.id) AS ids, collect(properties(r)) AS reservations, collect(held) AS taken
