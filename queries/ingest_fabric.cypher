// Replaces one cluster's switch fabric in a single atomic statement.
// Writes nothing and returns no row if a cabled NIC is not in the graph. Each cabled host
// learns the leaves its NICs reach and its pod (leaves that share spines), for hop counts.
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
OPTIONAL MATCH (:Switch {cluster: $cluster})<-[cable:UPLINK]-()
DELETE cable
WITH DISTINCT c
OPTIONAL MATCH (placed:Host {cluster: $cluster})
SET placed.leaves = [], placed.pod = NULL
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
  SET h.leaves = x.leaves, h.pod = x.pod)
FOREACH (l IN $switch_uplinks |
  MERGE (a:Switch {name: l.lower})
  MERGE (b:Switch {name: l.upper})
  CREATE (a)-[e:UPLINK]->(b)
  SET e += l.props)
RETURN c.name AS cluster, size($switches) AS switches, size($nic_uplinks) + size($switch_uplinks) AS links
