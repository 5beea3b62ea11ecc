// GPUs by uuid with their host, for reservations and checks.
// @read
// @param uuids list<string>
// @row uuid string, index int, model string, state string, host string, mig_mode bool?
MATCH (h:Host)-[:HAS_GPU]->(g:GPU)
WHERE g.uuid IN $uuids
RETURN g.uuid AS uuid, g.index AS index, g.model AS model, g.state AS state, h.name AS host,
       g.mig_mode AS mig_mode
ORDER BY host, index
