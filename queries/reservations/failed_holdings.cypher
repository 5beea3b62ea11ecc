// Live reservations holding a GPU that is unhealthy (failed, degraded) or on a host not heard
// from since $cutoff, with those GPUs. Read only (the replacement write checks under locks).
// @read
// @param cutoff float
// @param id string
// @param limit int
// @param now float
// @row reservation any, holder any, labels any, gpus any
MATCH (r:Reservation)-[:HOLDS]->(g:GPU)<-[:HAS_GPU]-(h:Host)
WHERE r.state = 'active' AND r.expires_at >= $now AND g.reservation = r.id AND ($id = '' OR r.id = $id)
  AND (toLower(coalesce(g.health, 'ok')) IN ['failed', 'degraded'] OR coalesce(h.received_at, $now) < $cutoff)
RETURN r.id AS reservation, r.holder AS holder, r.labels AS labels, collect(g.uuid) AS gpus
ORDER BY reservation
LIMIT $limit
