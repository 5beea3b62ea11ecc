// Replaces one cluster's switch fabric in a single atomic statement.
// Writes nothing and returns no row if a cabled NIC is not in the graph or is cabled to another
// cluster's switch (a NIC has one cable; fabric_nics_elsewhere says which), or if a switch it names
// is in another cluster's fabric (a switch is in one cluster's fabric: taken over, it would keep
// the other cluster's cables, its leaf counter counting both clusters' hosts, and that cluster's
// next import would take it back; fabric_switches_taken says which). Each cabled host
// learns the leaves its NICs reach, the spines above them and the cores above those (for hop
// counts), and its pod (for the exports).
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
// Locks (Neo4j; docs/store.md, "Lock first, then read, in one global order"): before it writes,
// the statement write-locks every host whose fabric fields it sets (the cluster's, those cabled to
// its switches now, those it cables), by name, then the cluster's switches and those it names, by
// name: hosts before leaves, as every reservation locks them. It deleted cables (locking their
// leaves) before it set the hosts, so a reservation holding a host and waiting for its leaf and
// this statement holding the leaf and waiting for the host deadlocked (Neo4j found it and one
// of them ran again). Under the hosts' locks it counts the cabled NICs again: a host document that
// dropped one and committed while this statement waited would otherwise see it recreated, hostless,
// by the cables' MERGE. A host that joins the cluster after the lock block read (its document
// committing while this statement waited) is locked late, when `placed` sets it, out of order.
// It is cabled to none of the switches this statement holds (a cabled host was locked with the
// others; only fabric imports cable hosts, and they are serialised by those switches' locks), so
// at worst the two statements deadlock and Neo4j ends one, which the gateway runs again (a
// transient error): either order leaves the host in the cluster with no fabric of its own.
// Then the cluster itself, last (as remove_host locks it): a site catalogue dropping a cluster
// that holds nothing locks it and counts its switches (sites_replace), and this statement's
// switches are not committed yet. Unlocked, the catalogue deleted the cluster under the import
// (its first switches then named a cluster with no node; 40 of 60 rounds on Neo4j). Locked, the
// catalogue waits and counts them, or deletes it first and this statement, meeting the node gone,
// runs again (EntityNotFound) and makes it anew (tests/integration/test_sites_fabric_race.py).
OPTIONAL MATCH (n:NIC)
WHERE n.uuid IN $nic_uuids
WITH count(n) AS found
WHERE found = size($nic_uuids)
//@lock-begin
OPTIONAL MATCH (lock_placed:Host {cluster: $cluster})
WITH found, collect(lock_placed) AS lock_placed
OPTIONAL MATCH (:Switch {cluster: $cluster})<-[:UPLINK]-(:NIC)<-[:HAS_NIC]-(lock_cabled:Host)
WITH found, lock_placed, collect(lock_cabled) AS lock_cabled
WITH found, lock_placed + lock_cabled AS lock_seen
UNWIND (CASE WHEN size($host_fabric) = 0 THEN [null] ELSE $host_fabric END) AS lock_fabric
OPTIONAL MATCH (lock_named:Host {name: lock_fabric.host})
WITH found, lock_seen, collect(lock_named) AS lock_named
WITH found, lock_seen + lock_named AS lock_seen
UNWIND (CASE WHEN size(lock_seen) = 0 THEN [null] ELSE lock_seen END) AS lock_host
WITH DISTINCT found, lock_host
ORDER BY lock_host.name
WITH found, collect(lock_host) AS lock_hosts
FOREACH (x IN lock_hosts | SET x:Host)
WITH found
OPTIONAL MATCH (lock_switch:Switch)
WHERE lock_switch.cluster = $cluster OR lock_switch.name IN $switch_names
WITH DISTINCT found, lock_switch
ORDER BY lock_switch.name
WITH found, collect(lock_switch) AS lock_switches
FOREACH (x IN lock_switches | SET x:Switch)
WITH found
OPTIONAL MATCH (lock_cluster:Cluster {name: $cluster})
WITH found, collect(lock_cluster) AS lock_clusters
FOREACH (x IN lock_clusters | SET x:Cluster)
WITH found
OPTIONAL MATCH (lock_nic:NIC)
WHERE lock_nic.uuid IN $nic_uuids
WITH found, count(lock_nic) AS lock_found
WHERE lock_found = size($nic_uuids)
WITH found
//@lock-end
// A NIC has one cable: none of the NICs it cables may be cabled to another cluster's switch
// (fabric_nics_elsewhere says which). Read under the hosts' locks: another cluster's import
// cabling one of them locks its host too, so the two run one after the other and the second
// sees the first's cable (checked before the locks, two imports at once gave a NIC both).
OPTIONAL MATCH (n:NIC)-[:UPLINK]->(cabled:Switch)
WHERE n.uuid IN $nic_uuids AND coalesce(cabled.cluster, '') <> $cluster
WITH found, count(cabled) AS elsewhere
WHERE elsewhere = 0
// `found` stays a grouping key: a count with no key over no row (a NIC missing) is one row.
// On Neo4j a switch no cluster has yet has no node to lock: what keeps two clusters' imports
// naming it from both passing this check is the locking seek on the Switch.name unique index (the
// lock block's read and this one), which holds each name's index entry, existing or not, until
// commit (tests/integration/test_fabric_switch_owner_neo4j.py).
OPTIONAL MATCH (taken:Switch)
WHERE taken.name IN $switch_names AND taken.cluster <> $cluster
WITH found, count(taken) AS taken
WHERE taken = 0
MERGE (c:Cluster {name: $cluster})
WITH c
OPTIONAL MATCH (old:Switch {cluster: $cluster})
WHERE NOT old.name IN $switch_names
DETACH DELETE old
WITH DISTINCT c
OPTIONAL MATCH (:Switch {cluster: $cluster})<-[cable:UPLINK]-(cabled)
OPTIONAL MATCH (cabled)<-[:HAS_NIC]-(uncabled:Host)
FOREACH (x IN CASE WHEN uncabled IS NULL THEN [] ELSE [uncabled] END |
  SET x.leaves = [], x.spines = [], x.cores = [], x.pod = NULL, x.fabric_digest = NULL)
DELETE cable
WITH DISTINCT c
OPTIONAL MATCH (placed:Host {cluster: $cluster})
SET placed.leaves = [], placed.spines = [], placed.cores = [], placed.pod = NULL, placed.fabric_digest = NULL
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
  SET h.leaves = x.leaves, h.spines = x.spines, h.cores = x.cores, h.pod = x.pod, h.fabric_digest = x.cabling)
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
