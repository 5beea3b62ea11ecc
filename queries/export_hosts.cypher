// Every host of a cluster with its place in the fabric and its NVLink domains, for exports.
// @read
// @param cluster string
// @row host string, rack string?, scalable_unit string?, leaves list<string>?, pod string?
// @row spines list<string>?, cores list<string>?, gpus int
// @row model string?, domains list<string>, kinds list<string>, collected_at float?
MATCH (h:Host)
WHERE h.cluster = $cluster
OPTIONAL MATCH (h)-[:HAS_GPU]->(:GPU)-[:IN_DOMAIN]->(d:NVLinkDomain)
WITH h, collect(DISTINCT d.uuid) AS domains, collect(DISTINCT d.kind) AS kinds
RETURN h.name AS host, h.rack AS rack, h.scalable_unit AS scalable_unit, h.leaves AS leaves, h.pod AS pod,
       h.spines AS spines, h.cores AS cores,
       h.gpu_count AS gpus, h.gpu_model AS model, domains, kinds, h.collected_at AS collected_at
ORDER BY host
