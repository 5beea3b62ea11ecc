// The NVLink domains a host's GPUs belong to now (read before an ingest, to prune after).
// @read
// @param host string
// @row uuids list<string>
MATCH (:Host {name: $host})-[:HAS_GPU]->(:GPU)-[:IN_DOMAIN]->(d:NVLinkDomain)
RETURN collect(DISTINCT d.uuid) AS uuids
