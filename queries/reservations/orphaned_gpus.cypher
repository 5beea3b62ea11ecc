// Invariant check: GPUs marked reserved for a reservation that is not live any more, or that
// does not hold them (must be none: every write that ends or shrinks a reservation frees them).
// @read
// @row uuid any, reservation any
MATCH (g:GPU)
WHERE g.state = 'reserved' AND g.reservation IS NOT NULL
OPTIONAL MATCH (r:Reservation {id: g.reservation})-[:HOLDS]->(g)
WITH g, r
WHERE r IS NULL OR r.state <> 'active'
RETURN g.uuid AS uuid, g.reservation AS reservation
ORDER BY uuid
LIMIT 100
