// Recomputes the free-GPU counter of the given NVLink domains (an NVL72 domain spans hosts).
// @write
// @param uuids list<string>
// @row domains int
MATCH (d:NVLinkDomain)
WHERE d.uuid IN $uuids
OPTIONAL MATCH (d)<-[:IN_DOMAIN]-(g:GPU)
WITH d, count(CASE WHEN g.state = 'free' THEN 1 END) AS free, count(g) AS size, min(g.model) AS model
SET d.free_gpus = free, d.size = size, d.gpu_model = model
RETURN count(d) AS domains
