// The hosts a preemption plan should search besides the free ones the counters show: the
// victims' hosts, the hosts sharing an NVLink domain with them, and the hosts cabled to their
// leaf switches (at most $limit, by name), so a placement can combine the GPUs a preemption
// would free with free GPUs next to them (the rest of an NVL72 rack, the rest of a leaf).
// Read only; the preemption's write checks everything again under locks.
// @read
// @param hosts list<string>
// @param limit int
// @row name any
MATCH (h:Host)
WHERE h.name IN $hosts
WITH collect(h) AS hs
UNWIND (CASE WHEN size(hs) = 0 THEN [null] ELSE hs END) AS h
OPTIONAL MATCH (h)-[:HAS_GPU]->(:GPU)-[:IN_DOMAIN]->(d:NVLinkDomain)
WITH hs, collect(DISTINCT d) AS ds
UNWIND (CASE WHEN size(ds) = 0 THEN [null] ELSE ds END) AS d
OPTIONAL MATCH (d)<-[:IN_DOMAIN]-(:GPU)<-[:HAS_GPU]-(dh:Host)
WITH hs, collect(DISTINCT dh) AS dhs
UNWIND (CASE WHEN size(hs) = 0 THEN [null] ELSE hs END) AS h
OPTIONAL MATCH (h)-[:HAS_NIC]->(:NIC)-[:UPLINK]->(leaf:Switch)
WITH hs, dhs, collect(DISTINCT leaf) AS leaves
UNWIND (CASE WHEN size(leaves) = 0 THEN [null] ELSE leaves END) AS leaf
OPTIONAL MATCH (leaf)<-[:UPLINK]-(:NIC)<-[:HAS_NIC]-(lh:Host)
WITH hs, dhs, collect(DISTINCT lh) AS lhs
UNWIND hs + dhs + lhs AS x
WITH DISTINCT x.name AS name
WHERE name IS NOT NULL
RETURN name
ORDER BY name
LIMIT $limit
