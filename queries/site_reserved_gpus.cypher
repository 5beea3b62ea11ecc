// The reserved GPUs of one site with their lease expiry, soonest first: what frees up when.
// compareSites predicts a site's wait from it (a lease that is renewed ends later: a lower bound).
// @read
// @param limit int
// @param site string
// @row uuid any, host any, expires_at any
MATCH (s:Site {name: $site})-[:HAS_CLUSTER]->(c:Cluster)
MATCH (h:Host)
WHERE h.cluster = c.name
MATCH (h)-[:HAS_GPU]->(g:GPU)
WHERE g.state = 'reserved' AND g.lease_expires_at IS NOT NULL
RETURN g.uuid AS uuid, h.name AS host, g.lease_expires_at AS expires_at
ORDER BY expires_at, uuid
LIMIT $limit
