// Replaces the site catalogue in one statement (atomic on both stores): every Site, with its
// links and cluster memberships, is deleted and written again from the parameters. Clusters
// with hosts are untouched; a cluster no site names belongs to no site. A cluster the old
// catalogue named and the new one does not, holding nothing (no rack, host or switch: the
// catalogue alone made it, by MERGE, for capacity not yet built), goes with its site, as
// remove_host drops a cluster with its last host; it used to stay, listed with 0 hosts.
// Such clusters are locked first (read committed: a host ingested into one meanwhile waits,
// and is counted), then their racks, hosts and switches are counted, as remove_host does.
// @write
// @param clusters list<map>
// @param links list<map>
// @param now float
// @param sites list<map>
// @row removed any, sites any, clusters_removed int
OPTIONAL MATCH (:Site)-[:HAS_CLUSTER]->(dropped:Cluster)
WHERE NOT dropped.name IN [c IN $clusters | c.cluster]
WITH collect(DISTINCT dropped) AS dropped
FOREACH (x IN dropped | SET x:Cluster) //@lock
WITH dropped
OPTIONAL MATCH (old:Site)
DETACH DELETE old
WITH dropped, count(*) AS removed
UNWIND (CASE WHEN size(dropped) = 0 THEN [null] ELSE dropped END) AS cluster
OPTIONAL MATCH (cluster)-[:HAS_RACK]->(cluster_rack:Rack)
WITH removed, cluster, cluster.name AS cluster_name, count(cluster_rack) AS cluster_racks
OPTIONAL MATCH (cluster_host:Host {cluster: cluster_name})
WHERE cluster IS NOT NULL AND cluster_racks = 0
WITH removed, cluster, cluster_name, cluster_racks, count(cluster_host) AS cluster_hosts
OPTIONAL MATCH (cluster_switch:Switch {cluster: cluster_name})
WHERE cluster IS NOT NULL AND cluster_racks + cluster_hosts = 0
WITH removed, cluster, cluster_racks, cluster_hosts, count(cluster_switch) AS cluster_switches
WITH removed,
     collect(CASE WHEN cluster IS NOT NULL AND cluster_racks + cluster_hosts + cluster_switches = 0
             THEN cluster END) AS gone
FOREACH (x IN gone | DETACH DELETE x)
WITH removed, size(gone) AS clusters_removed
FOREACH (s IN $sites |
  MERGE (n:Site {name: s.name})
  SET n.kind = s.kind, n.provider = s.provider, n.region = s.region, n.location = s.location,
      n.parent = s.parent, n.capacity_kinds = s.capacity_kinds,
      n.spot_preemption_per_h = s.spot_preemption_per_h, n.updated_at = $now
)
FOREACH (c IN $clusters |
  MERGE (n:Site {name: c.site})
  MERGE (k:Cluster {name: c.cluster})
  MERGE (n)-[:HAS_CLUSTER]->(k)
)
FOREACH (l IN $links |
  MERGE (a:Site {name: l.a})
  MERGE (b:Site {name: l.b})
  MERGE (a)-[r:SITE_LINK]->(b)
  SET r.bandwidth_gbps = l.bandwidth_gbps, r.latency_ms = l.latency_ms
)
RETURN removed, size($sites) AS sites, clusters_removed
