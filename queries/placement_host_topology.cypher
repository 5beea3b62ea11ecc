// What placement keeps of the hosts named in $hosts between requests (graphsvc.placement.
// topology_cache): per host its topology key (as fragments/placement_host_maps reads it), rack,
// cluster and fabric position (leaves, spines, cores, pod), and every GPU (free or not: which are free changes, this does not) with what
// changes only with the host's document or its cluster's fabric: its NVLink domain, nearest NIC
// (rail, speed, port state and error counts), its share of the NIC ports serving it
// (nic_share_rate_gbps: ingest's, Gb/s; null on a graph written before), that NIC's leaf and its
// direct NVLink peers [uuid, GB/s] (links to NVSwitches are in nvswitch_gbps). One map per host,
// each GPU a list:
// gpu: uuid, index, model, memory_mib, domain, domain_kind, nic, rail, nic_rate_gbps,
//   nic_share_rate_gbps, via, leaf, nic_state, nvswitch_gbps, mig_mode, peers, nic_errors
// (graphsvc.placement.model.HOST_TOPOLOGY_GPU_FIELDS; a unit test holds the two equal).
// The key is read before the traversals and again after: on Neo4j (read committed) a host
// document or fabric import that commits in between changes it, and the host is answered
// without a key (used for this request, not kept).
// Read once per host and key, so once per host document that changes the topology: the hot
// statements (placement_hosts_fit, _domains_fit, _leaves_fit) read the free GPUs' live fields only.
// OPTIONAL MATCH, not pattern comprehensions: on FalkorDB a comprehension per GPU costs ~10x.
// @read
// @param hosts list<string>
// @row hosts list<map>
UNWIND $hosts AS name
WITH DISTINCT name
MATCH (h:Host {name: name})
WITH h, h.facts_fingerprint + '/' + coalesce(h.fabric_digest, '') AS key_before
OPTIONAL MATCH (h)-[:HAS_GPU]->(g:GPU)
OPTIONAL MATCH (g)-[:IN_DOMAIN]->(d:NVLinkDomain)
OPTIONAL MATCH (g)-[a:NIC_AFFINITY]->(n:NIC)
OPTIONAL MATCH (n)-[:UPLINK]->(leaf:Switch)
OPTIONAL MATCH (g)-[link:NVLINK]-(peer:GPU)
WITH h, key_before, g, d, a, n, min(leaf.name) AS leaf_name,
     collect(CASE WHEN peer IS NULL THEN null ELSE [peer.uuid, link.bandwidth_gbps] END) AS peers
ORDER BY h.name, g.index
WITH h, key_before, collect(CASE WHEN g IS NULL THEN null ELSE [
  g.uuid, g.index, g.model, g.memory_mib, d.uuid, d.kind, n.name, n.rail, n.rate_gbps,
  g.nic_share_rate_gbps, a.via, leaf_name, n.state, g.nvswitch_gbps, g.mig_mode, peers,
  coalesce(n.symbol_errors, 0) + coalesce(n.link_downed, 0) + coalesce(n.port_rcv_errors, 0)
] END) AS gpus
RETURN collect({
  name: h.name, rack: h.rack, scalable_unit: h.scalable_unit, leaves: h.leaves, spines: h.spines, cores: h.cores, pod: h.pod, cluster: h.cluster,
  gpus: gpus,
  topology: CASE WHEN h.facts_fingerprint + '/' + coalesce(h.fabric_digest, '') = key_before THEN key_before END
}) AS hosts
