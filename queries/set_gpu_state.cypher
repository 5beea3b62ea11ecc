// Sets the state of the given GPUs (benchmarks' occupancy, operators' drains); callers recount after.
// @write
// @param state string
// @param uuids list<string>
// @row hosts list<string>
MATCH (h:Host)-[:HAS_GPU]->(g:GPU)
WHERE g.uuid IN $uuids
SET g.state = $state
RETURN collect(DISTINCT h.name) AS hosts
