// The hosts a live reservation can grow onto without leaving its layout: its own hosts, the
// hosts sharing an NVLink domain with its GPUs, and the hosts cabled to its leaf switches
// (at most $limit, by name). Read only; the resize write checks everything again under locks.
// @read
// @param id string
// @param limit int
// @row name any
MATCH (r:Reservation {id: $id})-[:HOLDS]->(g:GPU)<-[:HAS_GPU]-(h:Host)
WHERE g.reservation = r.id
WITH collect(DISTINCT g) AS gs, collect(DISTINCT h) AS hs
UNWIND gs AS g
OPTIONAL MATCH (g)-[:IN_DOMAIN]->(d:NVLinkDomain)
WITH hs, collect(DISTINCT d) AS ds
UNWIND (CASE WHEN size(ds) = 0 THEN [null] ELSE ds END) AS d
OPTIONAL MATCH (d)<-[:IN_DOMAIN]-(:GPU)<-[:HAS_GPU]-(dh:Host)
WITH hs, collect(DISTINCT dh) AS dhs
UNWIND hs AS h
OPTIONAL MATCH (h)-[:HAS_NIC]->(:NIC)-[:UPLINK]->(leaf:Switch)
WITH hs, dhs, collect(DISTINCT leaf) AS leaves
UNWIND (CASE WHEN size(leaves) = 0 THEN [null] ELSE leaves END) AS leaf
OPTIONAL MATCH (leaf)<-[:UPLINK]-(:NIC)<-[:HAS_NIC]-(lh:Host)
WITH hs, dhs, collect(DISTINCT lh) AS lhs
UNWIND hs + dhs + lhs AS x
WITH DISTINCT x.name AS name
RETURN name
ORDER BY name
LIMIT $limit
