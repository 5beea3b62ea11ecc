// Reserves exactly these MIG slices for a new reservation, or writes nothing and returns no
// row. Locks the slices first (uuid order), then reads what it decides on: every slice must
// exist and be free, or held by a reservation that is not live (ended, or its lease lapsed),
// and its GPU must not be held whole (a GPU reserved before it was partitioned).
// Two reserves racing for a slice serialise on its lock (Neo4j) or run one after the other
// (FalkorDB); the second sees it taken. Slices feed no free-GPU counter: nothing to recount.
// @write
// @param now float
// @param props map
// @param uuids list<string>
// @row id string
MATCH (s:MigSlice)
WHERE s.uuid IN $uuids
WITH s
ORDER BY s.uuid
SET s:MigSlice //@lock
WITH collect(s) AS slices
UNWIND slices AS s
OPTIONAL MATCH (old:Reservation {id: coalesce(s.reservation, '')})
OPTIONAL MATCH (whole:GPU)-[:HAS_SLICE]->(s)
WITH slices, s,
     CASE WHEN (s.state = 'free' OR old IS NULL OR old.state <> 'active' OR old.expires_at < $now)
       AND (whole.state = 'free' OR coalesce(whole.lease_expires_at, 0.0) < $now) THEN 1 ELSE 0 END AS takeable
WITH slices, toInteger(sum(takeable)) AS takeable
WHERE size(slices) = size($uuids) AND takeable = size($uuids)
CREATE (r:Reservation)
SET r += $props
FOREACH (x IN slices |
  SET x.state = 'reserved', x.reservation = $props.id, x.lease_expires_at = $props.expires_at
  MERGE (r)-[:HOLDS_SLICE]->(x))
WITH r, slices
UNWIND slices AS x
OPTIONAL MATCH (old:Reservation)-[stale:HOLDS_SLICE]->(x)
WHERE old.id <> $props.id
DELETE stale
WITH DISTINCT r
RETURN r.id AS id
