// Replaces the site catalogue in one statement (atomic on both stores): every Site, with its
// links and cluster memberships, is deleted and written again from the parameters. Clusters
// with hosts are untouched; a cluster no site names belongs to no site. A cluster the old
// catalogue named and the new one does not, holding nothing (no rack, host or switch: the
// catalogue alone made it, by MERGE, for capacity not yet built), goes with its site, as
// remove_host drops a cluster with its last host; it used to stay, listed with 0 hosts.
// Such clusters are locked first (read committed: a host ingested into one meanwhile waits,
// and is counted), then judged as remove_host judges its cluster (fragments/drop_empty_clusters:
// racks, hosts, switches; the sites naming them are gone by then).
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
WITH removed AS carry, dropped AS clusters
//@include drop_empty_clusters
WITH carry AS removed, clusters_removed
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
