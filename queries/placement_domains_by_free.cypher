// Candidate NVLink domains in best-fit order (see placement_hosts_by_free), with their hosts.
// @read
// @param first_size int
// @param last_size int
// @param limit int
// @param model string
// @param skip int
// @param step int
// @row domain string?, free int, hosts list<string>
UNWIND range($first_size, $last_size, $step) AS want
MATCH (d:NVLinkDomain)
WHERE d.free_gpus = want AND toLower(coalesce(d.gpu_model, '')) CONTAINS $model
WITH d, want
ORDER BY abs(want - $first_size), d.uuid
SKIP $skip
LIMIT $limit
MATCH (d)<-[:IN_DOMAIN]-(:GPU)<-[:HAS_GPU]-(h:Host)
RETURN d.uuid AS domain, want AS free, collect(DISTINCT h.name) AS hosts
