// Graph v7 -> v8, step 2: the fabric cliques hosts reported are named within their cluster,
// CLUSTER/fabric/REPORTED, as ingest names them now (and their GPUs' nvlink_domain with them: the
// explorer and GPU.scaleUpDomain read it) (graphsvc.ingest.host_plan.fabric_domain says
// why: taken as reported, a host could join any domain of any cluster). The cluster is the
// domain's, else its hosts'. A domain already so named is left: running it again changes nothing.
// @write
// @row domains int
MATCH (d:NVLinkDomain)
WHERE d.kind = 'fabric-clique'
OPTIONAL MATCH (d)<-[:IN_DOMAIN]-(:GPU)<-[:HAS_GPU]-(h:Host)
WITH d, coalesce(d.cluster, min(h.cluster), 'default') AS cluster
WHERE NOT (d.uuid STARTS WITH (cluster + '/fabric/'))
SET d.uuid = cluster + '/fabric/' + d.uuid, d.cluster = cluster
WITH d
OPTIONAL MATCH (d)<-[:IN_DOMAIN]-(g:GPU)
FOREACH (x IN CASE WHEN g IS NULL THEN [] ELSE [g] END | SET x.nvlink_domain = d.uuid)
RETURN count(DISTINCT d) AS domains
