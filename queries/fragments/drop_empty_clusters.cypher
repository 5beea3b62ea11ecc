// Fragment (not a query): included with `//@include drop_empty_clusters` by the writes that may
// leave a cluster holding nothing (remove_host, with its last host; sites_replace, for a cluster
// the site catalogue alone made), so that what "empty" means is written once. A cluster goes
// when it has no rack, no host, no switch of its fabric (the fabric import's) and no site naming
// it; each is counted only while the ones before found nothing. In: `carry` (any value to pass
// through) and `clusters` (the Cluster nodes to judge, write-locked by the caller: a host or
// fabric import committed meanwhile is counted, and the cluster stays; read here through the
// unwound variable, after the lock). Out: `WITH carry, clusters_removed` (one row).
UNWIND (CASE WHEN size(clusters) = 0 THEN [null] ELSE clusters END) AS cluster
OPTIONAL MATCH (cluster)-[:HAS_RACK]->(cluster_rack:Rack)
WITH carry, cluster, cluster.name AS cluster_name, count(cluster_rack) AS cluster_racks
OPTIONAL MATCH (cluster_host:Host {cluster: cluster_name})
WHERE cluster IS NOT NULL AND cluster_racks = 0
WITH carry, cluster, cluster_name, cluster_racks, count(cluster_host) AS cluster_hosts
OPTIONAL MATCH (cluster_switch:Switch {cluster: cluster_name})
WHERE cluster IS NOT NULL AND cluster_racks + cluster_hosts = 0
WITH carry, cluster, cluster_racks, cluster_hosts, count(cluster_switch) AS cluster_switches
OPTIONAL MATCH (cluster_site:Site)-[:HAS_CLUSTER]->(cluster)
WITH carry, cluster, cluster_racks, cluster_hosts, cluster_switches, count(cluster_site) AS cluster_sites
WITH carry,
     collect(CASE WHEN cluster IS NOT NULL AND cluster_racks + cluster_hosts + cluster_switches + cluster_sites = 0
             THEN cluster END) AS gone
FOREACH (x IN gone | DETACH DELETE x)
WITH carry, size(gone) AS clusters_removed
