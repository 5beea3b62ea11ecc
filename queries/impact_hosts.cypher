// Every host's free GPUs and the leaves its NICs reach, for what capacity a failure leaves.
// @read
// @row host string, free int, leaves list<string>, domains list<string>
MATCH (h:Host)
OPTIONAL MATCH (h)-[:HAS_GPU]->(g:GPU)-[:IN_DOMAIN]->(d:NVLinkDomain)
WITH h, collect(DISTINCT d.uuid) AS domains
RETURN h.name AS host, coalesce(h.free_gpus, 0) AS free, coalesce(h.leaves, []) AS leaves, domains
ORDER BY host
