// Replaces the site catalogue in one statement (atomic on both stores): every Site, with its
// links and cluster memberships, is deleted and written again from the parameters. Clusters
// and their hosts are untouched; a cluster no site names belongs to no site.
// @write
// @param clusters list<map>
// @param links list<map>
// @param now float
// @param sites list<map>
// @row removed any, sites any
OPTIONAL MATCH (old:Site)
DETACH DELETE old
WITH count(*) AS removed
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
RETURN removed, size($sites) AS sites
