// Replaces one cluster's switch fabric in a single atomic statement.
// Writes nothing and returns no row if a cabled NIC is not in the graph. Each cabled host
// learns the leaves its NICs reach and its pod (leaves that share spines), for hop counts.
// Each cabled host also gets the digest of its cabling and position (fabric_digest; null when
// uncabled, as is every host whose cable to this cluster's switches the import removes, of
// whatever cluster): placement keeps a host's NICs' leaves between requests under its
// facts_fingerprint and fabric_digest (graphsvc.placement.topology_cache).
// @write
// @param cluster string
// @param host_fabric list<map>
// @param nic_uplinks list<map>
// @param nic_uuids list<string>
// @param switch_names list<string>
// @param switch_uplinks list<map>
// @param switches list<map>
// @row cluster string?, switches int, links int
OPTIONAL MATCH (n:NIC)
WHERE n.uuid IN $nic_uuids
WITH count(n) AS found
WHERE found = size($nic_uuids)
MERGE (c:Cluster {name: $cluster})
WITH c
OPTIONAL MATCH (old:Switch {cluster: $cluster})
WHERE NOT old.name IN $switch_names
DETACH DELETE old
WITH DISTINCT c
OPTIONAL MATCH (:Switch {cluster: $cluster})<-[cable:UPLINK]-(cabled)
OPTIONAL MATCH (cabled)<-[:HAS_NIC]-(uncabled:Host)
FOREACH (x IN CASE WHEN uncabled IS NULL THEN [] ELSE [uncabled] END |
  SET x.leaves = [], x.pod = NULL, x.fabric_digest = NULL)
DELETE cable
WITH DISTINCT c
OPTIONAL MATCH (placed:Host {cluster: $cluster})
SET placed.leaves = [], placed.pod = NULL, placed.fabric_digest = NULL
WITH DISTINCT c
FOREACH (s IN $switches |
  MERGE (x:Switch {name: s.name})
  SET x += s.props)
FOREACH (l IN $nic_uplinks |
  MERGE (a:NIC {uuid: l.nic})
  MERGE (b:Switch {name: l.switch})
  CREATE (a)-[e:UPLINK]->(b)
  SET e += l.props)
FOREACH (x IN $host_fabric |
  MERGE (h:Host {name: x.host})
  SET h.leaves = x.leaves, h.pod = x.pod, h.fabric_digest = x.cabling)
FOREACH (l IN $switch_uplinks |
  MERGE (a:Switch {name: l.lower})
  MERGE (b:Switch {name: l.upper})
  CREATE (a)-[e:UPLINK]->(b)
  SET e += l.props)
// The leaves' free-GPU counters (the sum over the hosts cabled to each), in this same statement,
// so a crash cannot leave them behind the new cabling.
WITH c
OPTIONAL MATCH (leaf:Switch {cluster: $cluster, tier: 'leaf'})
OPTIONAL MATCH (leaf)<-[:UPLINK]-(:NIC)<-[:HAS_NIC]-(lh:Host)
WITH c, leaf, collect(DISTINCT lh) AS leaf_hosts
FOREACH (x IN CASE WHEN leaf IS NULL THEN [] ELSE [leaf] END |
  SET x.free_gpus = reduce(total = 0, y IN leaf_hosts | total + coalesce(y.free_gpus, 0)))
WITH c, count(leaf) AS leaves
RETURN c.name AS cluster, size($switches) AS switches, size($nic_uplinks) + size($switch_uplinks) AS links
