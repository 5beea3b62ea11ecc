// Replaces one host's facts in a single statement, so the write is atomic on
// FalkorDB (one query) and Neo4j (one transaction): all of a host's facts or none.
// Returns no row, and writes nothing, when the stored facts are newer
// ($host.collected_at older) or a GPU or MIG slice uuid belongs to another host.
// (Filters follow a projection, not an OPTIONAL MATCH variable directly: FalkorDB
// would fold such a WHERE into the OPTIONAL MATCH instead of dropping the row.)
// Locks first (Neo4j read committed): the host's current GPUs in uuid order, then the counters
// they feed (fragments/lock_counters), then the NVLink domains the new facts join, and only
// then reads the stored collected_at it decides on. The free-GPU counters of the host, its
// NVLink domains and leaves are recounted at the end of this same statement, so a crash can
// never leave them behind the GPUs. NVLink domains the host leaves (recabling; `domains_left`, already
// locked by lock_counters as domains of the host's GPUs) are recounted too, or removed when no
// GPU is left in them: one statement per host document, nothing to repair after a crash (#15).
// MIG slices are replaced with the GPUs: a slice the facts no longer list is deleted, and a live
// reservation holding it records it in lost_slices.
// The host's impaired_gpus (fragments/host_impaired: GPUs placement_usable could refuse whatever
// the request's bounds) is recounted with its free-GPU counter: every fact it reads is written here.
// A GPU's health and load ($gpus[].state) are written only when no newer metrics are stored
// (update_gpu_metrics sets metrics_at): an older document gives the topology and leaves them.
// @write
// @param domains list<map>
// @param gpu_domains list<map>
// @param gpu_nics list<map>
// @param gpu_numa list<map>
// @param gpu_nvlinks list<map>
// @param gpu_pcie list<map>
// @param gpu_uuids list<string>
// @param gpus list<map>
// @param host map
// @param keep_uuids list<string>
// @param mig_slices list<map>
// @param nic_numa list<map>
// @param nic_pcie list<map>
// @param nics list<map>
// @param numa_nodes list<map>
// @param nvswitches list<map>
// @param pcie_switches list<map>
// @param rack map
// @param switch_nvlinks list<map>
// @param switch_pcie list<map>
// @row host string
OPTIONAL MATCH (prev:Host {name: $host.name})
OPTIONAL MATCH (prev)-[:HAS_GPU]->(pg:GPU)
WITH pg
ORDER BY pg.uuid
FOREACH (x IN CASE WHEN pg IS NULL THEN [] ELSE [pg] END | SET x:GPU) //@lock
WITH collect(pg) AS gpus, null AS keep
//@include lock_counters
OPTIONAL MATCH (joined:NVLinkDomain)
WHERE joined.uuid IN [d IN $domains | d.uuid]
WITH joined
ORDER BY joined.uuid
FOREACH (x IN CASE WHEN joined IS NULL THEN [] ELSE [joined] END | SET x:NVLinkDomain) //@lock
WITH count(joined) AS locked
OPTIONAL MATCH (:Host {name: $host.name})-[:HAS_GPU]->(:GPU)-[:IN_DOMAIN]->(od:NVLinkDomain)
WITH [u IN collect(DISTINCT od.uuid) WHERE NOT u IN [d IN $domains | d.uuid]] AS domains_left
OPTIONAL MATCH (prev:Host {name: $host.name})
WITH domains_left, coalesce(prev.collected_at, 0.0) AS stored_at
WHERE stored_at <= $host.props.collected_at
OPTIONAL MATCH (taken:GPU)
WHERE taken.uuid IN $gpu_uuids AND taken.host <> $host.name
WITH domains_left, stored_at, count(taken) AS taken_count
OPTIONAL MATCH (taken_slice:MigSlice)
WHERE taken_slice.uuid IN [s IN $mig_slices | s.uuid] AND taken_slice.host <> $host.name
WITH domains_left, stored_at, taken_count, count(taken_slice) AS taken_slices
WHERE taken_count + taken_slices = 0
MERGE (c:Cluster {name: $host.cluster})
MERGE (r:Rack {uuid: $rack.uuid})
SET r.name = $rack.name, r.cluster = $host.cluster
MERGE (c)-[:HAS_RACK]->(r)
MERGE (h:Host {name: $host.name})
SET h += $host.props
WITH domains_left, r, h
OPTIONAL MATCH (old_rack:Rack)-[old_home:HAS_HOST]->(h)
WHERE old_rack.uuid <> $rack.uuid
DELETE old_home
WITH DISTINCT domains_left, r, h, old_rack
MERGE (r)-[:HAS_HOST]->(h)
// A host that moved (another rack, or another cluster) takes its old rack with it when no other
// host is left in it, and then the old rack's cluster when nothing is left in it, as remove_host
// judges them (fragments/drop_empty_clusters): they stayed, listed by clusterSummary with 0 hosts
// (a probe, stop 73). Locked first, the rack then its cluster (remove_host's order): a host ingested
// into that rack or cluster meanwhile is counted, and they stay.
WITH domains_left, h, old_rack
ORDER BY old_rack.uuid
WITH domains_left, h, collect(old_rack) AS old_racks
FOREACH (x IN old_racks | SET x:Rack) //@lock
WITH domains_left, h, old_racks
UNWIND (CASE WHEN size(old_racks) = 0 THEN [null] ELSE old_racks END) AS old_rack
OPTIONAL MATCH (old_rack)-[:HAS_HOST]->(rack_host)
WITH domains_left, h, old_rack, count(rack_host) AS rack_hosts
OPTIONAL MATCH (old_cluster:Cluster)-[:HAS_RACK]->(old_rack)
WITH domains_left, h, old_rack, rack_hosts, old_cluster
FOREACH (x IN CASE WHEN old_rack IS NOT NULL AND rack_hosts = 0 THEN [old_rack] ELSE [] END | DETACH DELETE x)
WITH domains_left, h, CASE WHEN rack_hosts = 0 THEN old_cluster END AS old_cluster
ORDER BY old_cluster.name
WITH domains_left, h, collect(DISTINCT old_cluster) AS clusters
FOREACH (x IN clusters | SET x:Cluster) //@lock
WITH {host: h, domains_left: domains_left} AS carry, clusters
//@include drop_empty_clusters
WITH carry.domains_left AS domains_left, carry.host AS h
// A NIC the facts no longer list takes its fabric cable with it: the host's fabric digest no
// longer says what the graph holds, so it is cleared (placement keeps a host's topology under
// facts_fingerprint and fabric_digest; the NIC listed again gets its cable at the next fabric import).
// The leaves those cables reached (`leaves_cut`, locked by lock_counters as the host's leaves)
// are recounted at the end with the host's remaining ones, and the host's `leaves` become the
// ones it still reaches: a leaf the host left no longer counts its GPUs.
OPTIONAL MATCH (h)-[:HAS_NIC]->(cut:NIC)-[:UPLINK]->(cut_leaf:Switch)
WHERE NOT cut.uuid IN $keep_uuids
WITH domains_left, h, count(cut) AS cut_cables, collect(DISTINCT cut_leaf.name) AS leaves_cut
FOREACH (x IN CASE WHEN cut_cables > 0 THEN [h] ELSE [] END | SET x.fabric_digest = NULL)
WITH domains_left, leaves_cut, h
OPTIONAL MATCH (h)-[:HAS_NUMA|HAS_GPU|HAS_NVSWITCH|HAS_PCIE_SWITCH|HAS_NIC]->(gone)
WHERE NOT gone.uuid IN $keep_uuids
DETACH DELETE gone
WITH DISTINCT domains_left, leaves_cut, h
OPTIONAL MATCH (gone_slice:MigSlice {host: $host.name})
WHERE NOT gone_slice.uuid IN [s IN $mig_slices | s.uuid]
OPTIONAL MATCH (loser:Reservation)-[:HOLDS_SLICE]->(gone_slice)
FOREACH (x IN CASE WHEN loser IS NULL OR loser.state <> 'active' THEN [] ELSE [loser] END |
  SET x.lost_slices = coalesce(x.lost_slices, []) + gone_slice.uuid)
DETACH DELETE gone_slice
WITH DISTINCT domains_left, leaves_cut, h
OPTIONAL MATCH (h)-[:HAS_GPU|HAS_NIC|HAS_PCIE_SWITCH]->(dev)-[derived:NVLINK|PCIE_UPSTREAM|NUMA_AFFINITY|IN_DOMAIN|NIC_AFFINITY]->()
DELETE derived
WITH DISTINCT domains_left, leaves_cut, h
FOREACH (n IN $numa_nodes |
  MERGE (x:NUMANode {uuid: n.uuid})
  SET x += n.props
  MERGE (h)-[:HAS_NUMA]->(x))
FOREACH (s IN $pcie_switches |
  MERGE (x:PCIeSwitch {uuid: s.uuid})
  SET x += s.props
  MERGE (h)-[:HAS_PCIE_SWITCH]->(x))
FOREACH (s IN $nvswitches |
  MERGE (x:NVSwitch {uuid: s.uuid})
  SET x += s.props
  MERGE (h)-[:HAS_NVSWITCH]->(x))
FOREACH (g IN $gpus |
  MERGE (x:GPU {uuid: g.uuid})
  ON CREATE SET x.state = 'free', x += g.state
  SET x += g.props
  FOREACH (fresh IN CASE WHEN coalesce(h.metrics_at, 0.0) <= $host.props.collected_at THEN [g.state] ELSE [] END |
    SET x += fresh)
  MERGE (h)-[:HAS_GPU]->(x))
FOREACH (s IN $mig_slices |
  MERGE (x:MigSlice {uuid: s.uuid})
  ON CREATE SET x.state = 'free'
  SET x += s.props
  MERGE (g:GPU {uuid: s.gpu})
  MERGE (g)-[:HAS_SLICE]->(x))
FOREACH (n IN $nics |
  MERGE (x:NIC {uuid: n.uuid})
  SET x += n.props
  MERGE (h)-[:HAS_NIC]->(x))
FOREACH (d IN $domains |
  MERGE (x:NVLinkDomain {uuid: d.uuid})
  SET x += d.props)
FOREACH (l IN $gpu_nvlinks |
  MERGE (a:GPU {uuid: l.src})
  MERGE (b:GPU {uuid: l.dst})
  CREATE (a)-[e:NVLINK]->(b)
  SET e += l.props)
FOREACH (l IN $switch_nvlinks |
  MERGE (a:GPU {uuid: l.src})
  MERGE (b:NVSwitch {uuid: l.dst})
  CREATE (a)-[e:NVLINK]->(b)
  SET e += l.props)
FOREACH (l IN $gpu_pcie |
  MERGE (a:GPU {uuid: l.src})
  MERGE (b:PCIeSwitch {uuid: l.dst})
  CREATE (a)-[:PCIE_UPSTREAM]->(b))
FOREACH (l IN $nic_pcie |
  MERGE (a:NIC {uuid: l.src})
  MERGE (b:PCIeSwitch {uuid: l.dst})
  CREATE (a)-[:PCIE_UPSTREAM]->(b))
FOREACH (l IN $switch_pcie |
  MERGE (a:PCIeSwitch {uuid: l.src})
  MERGE (b:PCIeSwitch {uuid: l.dst})
  CREATE (a)-[:PCIE_UPSTREAM]->(b))
FOREACH (l IN $gpu_numa |
  MERGE (a:GPU {uuid: l.src})
  MERGE (b:NUMANode {uuid: l.dst})
  CREATE (a)-[:NUMA_AFFINITY]->(b))
FOREACH (l IN $nic_numa |
  MERGE (a:NIC {uuid: l.src})
  MERGE (b:NUMANode {uuid: l.dst})
  CREATE (a)-[:NUMA_AFFINITY]->(b))
FOREACH (l IN $gpu_domains |
  MERGE (a:GPU {uuid: l.src})
  MERGE (b:NVLinkDomain {uuid: l.dst})
  CREATE (a)-[:IN_DOMAIN]->(b))
FOREACH (l IN $gpu_nics |
  MERGE (a:GPU {uuid: l.src})
  MERGE (b:NIC {uuid: l.dst})
  CREATE (a)-[e:NIC_AFFINITY]->(b)
  SET e.via = l.via)
WITH domains_left, leaves_cut, h
OPTIONAL MATCH (h)-[:HAS_GPU]->(g:GPU)
WITH domains_left, leaves_cut, h, count(CASE WHEN g.state = 'free' AND coalesce(g.health, 'ok') <> 'failed' THEN 1 END) AS host_free, min(g.model) AS host_model
SET h.free_gpus = host_free, h.gpu_model = host_model
// impaired_gpus as fragments/host_impaired counts it, the NIC affinity judged from $gpu_nics and
// $nics (the edges and NIC states this statement just wrote, all of them) rather than by a
// traversal: on FalkorDB the first host of a graph (no NIC_AFFINITY edge before this statement)
// read none there and counted every GPU impaired. Health, MIG mode and model are read from the
// GPUs (a newer metrics push may have kept its health).
WITH domains_left, leaves_cut, h,
     [n IN $nics WHERE toLower(coalesce(n.props.state, '')) IN ['down', 'init'] | n.uuid] AS down_nics
CALL (h, down_nics) {
  OPTIONAL MATCH (h)-[:HAS_GPU]->(ig)
  WITH h, ig, [l IN $gpu_nics WHERE l.src = ig.uuid | l.via = 'pcie-switch' AND NOT l.dst IN down_nics] AS links
  WITH h, toInteger(sum(CASE WHEN ig IS NULL THEN 0
                             WHEN size(links) = 0 OR NOT all(ok IN links WHERE ok) OR coalesce(ig.mig_mode, false)
                                  OR toLower(coalesce(ig.health, 'ok')) IN ['failed', 'degraded']
                                  OR coalesce(ig.model <> h.gpu_model, true) THEN 1
                             ELSE 0 END)) AS impaired
  SET h.impaired_gpus = impaired
  RETURN count(*) AS impaired_hosts
}
WITH domains_left, leaves_cut, h
OPTIONAL MATCH (h)-[:HAS_GPU]->(:GPU)-[:IN_DOMAIN]->(d:NVLinkDomain)
WITH domains_left, leaves_cut, h, collect(DISTINCT d) AS domains
UNWIND (CASE WHEN size(domains) = 0 THEN [null] ELSE domains END) AS d
OPTIONAL MATCH (d)<-[:IN_DOMAIN]-(m:GPU)
WITH domains_left, leaves_cut, h, d, count(CASE WHEN m.state = 'free' AND coalesce(m.health, 'ok') <> 'failed' THEN 1 END) AS domain_free, count(m) AS domain_size, min(m.model) AS domain_model
FOREACH (x IN CASE WHEN d IS NULL THEN [] ELSE [d] END |
  SET x.free_gpus = domain_free, x.size = domain_size, x.gpu_model = domain_model)
WITH DISTINCT domains_left, leaves_cut, h
OPTIONAL MATCH (h)-[:HAS_NIC]->(:NIC)-[:UPLINK]->(kept:Switch)
WITH DISTINCT domains_left, leaves_cut, h, kept
ORDER BY kept.name
WITH domains_left, leaves_cut, h, collect(kept) AS leaves
WITH domains_left, leaves_cut, h, leaves, [n IN leaves_cut WHERE NOT n IN [l IN leaves | l.name]] AS left_names
// A host that lost a cable reaches the switches above the leaves it keeps ("spines", whatever
// their tier) and those above them ("cores"; hop counts: graphsvc.placement.model.hops), read
// again here only then. Kept as they
// were, a host that left its only leaf under a spine was still called 3 hops from that spine's
// hosts. A host that left a leaf may have left the pod its position named (the pods are the
// fabric import's to say, for the exports): no pod until the next import.
UNWIND (CASE WHEN size(leaves_cut) = 0 OR size(leaves) = 0 THEN [null] ELSE leaves END) AS up_leaf
OPTIONAL MATCH (up_leaf)-[:UPLINK]->(up_spine:Switch)
OPTIONAL MATCH (up_spine)-[:UPLINK]->(up_core:Switch)
WITH domains_left, leaves_cut, h, leaves, left_names,
     collect(DISTINCT up_spine.name) AS spines, collect(DISTINCT up_core.name) AS cores
FOREACH (x IN CASE WHEN size(leaves_cut) = 0 THEN [] ELSE [h] END |
  SET x.leaves = [l IN leaves | l.name], x.spines = spines, x.cores = cores,
      x.pod = CASE WHEN size(left_names) > 0 THEN NULL ELSE x.pod END)
// A host that lost a cable (its rail-0 NIC, say) may be under no leaf the one-leaf search pages
// (rail-0 leaves and hosts' first leaves): its first remaining leaf in each cluster it is cabled
// to, lowest rail then name, becomes one (Switch.home_leaf). A fabric import recomputes the flags
// of its own cluster's leaves only: one flag for a host cabled to two clusters' leaves could land
// in the cluster whose next import drops it (a review's case).
WITH domains_left, h, leaves, left_names, leaves_cut, [l IN leaves WHERE l.tier = 'leaf'] AS cabled
WITH domains_left, h, leaves, left_names,
     CASE WHEN size(leaves_cut) = 0 THEN [] ELSE
       [l IN cabled WHERE NOT any(m IN cabled WHERE m.cluster = l.cluster
          AND (coalesce(m.rail, 0) < coalesce(l.rail, 0) OR (coalesce(m.rail, 0) = coalesce(l.rail, 0) AND m.name < l.name)))]
     END AS firsts
FOREACH (x IN firsts | SET x.home_leaf = true)
WITH domains_left, h, leaves, left_names
UNWIND (CASE WHEN size(left_names) = 0 THEN [null] ELSE left_names END) AS left_name
OPTIONAL MATCH (left_leaf:Switch {name: left_name})
WITH domains_left, h, leaves, collect(left_leaf) AS left_leaves
WITH domains_left, h, leaves + left_leaves AS leaves
UNWIND (CASE WHEN size(leaves) = 0 THEN [null] ELSE leaves END) AS leaf
OPTIONAL MATCH (leaf)<-[:UPLINK]-(:NIC)<-[:HAS_NIC]-(lh:Host)
WITH domains_left, h, leaf, collect(DISTINCT lh) AS leaf_hosts
FOREACH (x IN CASE WHEN leaf IS NULL THEN [] ELSE [leaf] END |
  SET x.free_gpus = reduce(total = 0, y IN leaf_hosts | total + coalesce(y.free_gpus, 0)))
WITH DISTINCT domains_left, h
UNWIND (CASE WHEN size(domains_left) = 0 THEN [null] ELSE domains_left END) AS gone_uuid
OPTIONAL MATCH (gone:NVLinkDomain {uuid: gone_uuid})
OPTIONAL MATCH (gone)<-[:IN_DOMAIN]-(gm:GPU)
WITH h, gone, count(CASE WHEN gm.state = 'free' AND coalesce(gm.health, 'ok') <> 'failed' THEN 1 END) AS gone_free, count(gm) AS gone_size, min(gm.model) AS gone_model
FOREACH (x IN CASE WHEN gone IS NOT NULL AND gone_size = 0 THEN [gone] ELSE [] END | DETACH DELETE x)
FOREACH (x IN CASE WHEN gone IS NOT NULL AND gone_size > 0 THEN [gone] ELSE [] END |
  SET x.free_gpus = gone_free, x.size = gone_size, x.gpu_model = gone_model)
WITH DISTINCT h
RETURN h.name AS host
