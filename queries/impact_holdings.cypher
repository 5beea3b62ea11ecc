// Every GPU a live reservation holds, with where it sits (host, NVLink domain, the leaf of its
// nearest NIC), in the order the reservation lists its GPUs (host, index): its ranks.
// @read
// @param now float
// @row reservation string, holder string, uuid string, index int, host string, domain string?
// @row leaf string?
MATCH (r:Reservation)-[:HOLDS]->(g:GPU)<-[:HAS_GPU]-(h:Host)
WHERE r.state = 'active' AND r.expires_at >= $now AND g.reservation = r.id
OPTIONAL MATCH (g)-[:IN_DOMAIN]->(d:NVLinkDomain)
OPTIONAL MATCH (g)-[:NIC_AFFINITY]->(n:NIC)
OPTIONAL MATCH (n)-[:UPLINK]->(leaf:Switch)
RETURN r.id AS reservation, r.holder AS holder, g.uuid AS uuid, g.index AS index, h.name AS host,
       d.uuid AS domain, leaf.name AS leaf
ORDER BY reservation, host, index
