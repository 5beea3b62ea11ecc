// Free GPUs on the given hosts and in the NVLink domains of their GPUs (shrink planning).
// @read
// @param hosts list<string>
// @row host any, host_free any, domains any
MATCH (h:Host)-[:HAS_GPU]->(g:GPU)
WHERE h.name IN $hosts
OPTIONAL MATCH (g)-[:IN_DOMAIN]->(d:NVLinkDomain)
RETURN h.name AS host, h.free_gpus AS host_free, collect(DISTINCT {domain: d.uuid, free: d.free_gpus}) AS domains
ORDER BY host
