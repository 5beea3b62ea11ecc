// Recomputes the free-GPU counter (free and not failed), GPU model and impaired_gpus
// (fragments/host_impaired) of the given hosts, and
// returns the NVLink domains and leaf switches whose counters depend on them.
// @write
// @param hosts list<string>
// @row host string, domains list<string>, leaves list<string>
MATCH (h:Host)
WHERE h.name IN $hosts
OPTIONAL MATCH (h)-[:HAS_GPU]->(g:GPU)
WITH h, count(CASE WHEN g.state = 'free' AND coalesce(g.health, 'ok') <> 'failed' THEN 1 END) AS free, min(g.model) AS model
SET h.free_gpus = free, h.gpu_model = model
WITH h
CALL (h) {
//@include host_impaired
}
WITH h
OPTIONAL MATCH (h)-[:HAS_GPU]->(:GPU)-[:IN_DOMAIN]->(d:NVLinkDomain)
WITH h, collect(DISTINCT d.uuid) AS domains
OPTIONAL MATCH (h)-[:HAS_NIC]->(:NIC)-[:UPLINK]->(leaf:Switch)
RETURN h.name AS host, domains, collect(DISTINCT leaf.name) AS leaves
