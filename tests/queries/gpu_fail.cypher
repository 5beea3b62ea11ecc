// Test only: marks one GPU failed in place, as a collector's report would mark it, and recounts
// its host's impaired_gpus as every production write of a GPU's health does (fragments/
// host_impaired; counter_drift checks it). The free counters are left alone: the tests fail a GPU
// a reservation holds (not free either way), and check the counters after with counter_drift.
// @write
// @param uuid string
// @row host string
MATCH (h:Host)-[:HAS_GPU]->(g:GPU {uuid: $uuid})
SET g.health = 'failed'
WITH h
CALL (h) {
//@include host_impaired
}
RETURN h.name AS host
