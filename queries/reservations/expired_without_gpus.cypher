// Ends lapsed reservations that no longer hold any GPU (all taken over); nothing to free.
MATCH (r:Reservation)
WHERE r.state = 'active' AND r.expires_at < $now
OPTIONAL MATCH (r)-[:HOLDS]->(g:GPU)
WHERE g.reservation = r.id
WITH r, count(g) AS held
WHERE held = 0
WITH r
LIMIT $limit
SET r.state = 'expired', r.ended_at = $now
RETURN collect(r.id) AS ids
