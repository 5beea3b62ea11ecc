// The site of each given host: the site that owns the host's cluster (null when none does).
// Placement groups hosts by it, so that no placement spans sites unless asked to.
// @read
// @param hosts list<string>
// @row host any, site any
MATCH (h:Host)
WHERE h.name IN $hosts
OPTIONAL MATCH (s:Site)-[:HAS_CLUSTER]->(c:Cluster {name: h.cluster})
RETURN h.name AS host, s.name AS site
ORDER BY host
