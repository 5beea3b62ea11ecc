// Graph v2 -> v3 (2/3): NVLink domains gained free_gpus and size.
// @write
// @row domains int
MATCH (d:NVLinkDomain)
OPTIONAL MATCH (d)<-[:IN_DOMAIN]-(g:GPU)
WITH d, count(CASE WHEN g.state = 'free' AND coalesce(g.health, 'ok') <> 'failed' THEN 1 END) AS free, count(g) AS size, min(g.model) AS model
SET d.free_gpus = free, d.size = size, d.gpu_model = model
RETURN count(d) AS domains
