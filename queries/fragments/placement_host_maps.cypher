// Fragment (not a query): what placement needs of the hosts named in `names`, one map per host
// (never a host's fields repeated per GPU): its fabric position, freshness and site, and its
// free GPUs (state free, a reservation whose lease lapsed before $now, or one of
// $virtual_free, which a preemption plan may take), each with its NVLink domain, nearest NIC,
// rail, leaf and direct NVLink peers [uuid, GB/s] (links to NVSwitches are in nvswitch_gbps), its
// memory in use and error counts (the same sums as placement_host_gpus: scoring weighs them).
// OPTIONAL MATCH, not pattern comprehensions: on FalkorDB a comprehension per GPU costs ~10x.
// In: `keep` (any value carried through), `host_blocks`, `domain_blocks`, `names`. Out:
// `WITH keep, host_blocks, domain_blocks, hosts`, one row per input row.
UNWIND (CASE WHEN size(names) = 0 THEN [null] ELSE names END) AS map_name
OPTIONAL MATCH (map_host:Host {name: map_name})
OPTIONAL MATCH (map_host)-[:HAS_GPU]->(map_gpu:GPU)
WHERE map_gpu.state = 'free' OR map_gpu.uuid IN $virtual_free
  OR (map_gpu.state = 'reserved' AND map_gpu.lease_expires_at < $now)
OPTIONAL MATCH (map_gpu)-[:IN_DOMAIN]->(map_domain:NVLinkDomain)
OPTIONAL MATCH (map_gpu)-[map_aff:NIC_AFFINITY]->(map_nic:NIC)
OPTIONAL MATCH (map_nic)-[:UPLINK]->(map_leaf:Switch)
OPTIONAL MATCH (map_gpu)-[map_link:NVLINK]-(map_peer:GPU)
WITH keep, host_blocks, domain_blocks, map_host, map_gpu, map_domain, map_aff, map_nic,
     min(map_leaf.name) AS map_leaf_name,
     collect(CASE WHEN map_peer IS NULL THEN null ELSE [map_peer.uuid, map_link.bandwidth_gbps] END) AS map_peers
WITH keep, host_blocks, domain_blocks, map_host, collect(CASE WHEN map_gpu IS NULL THEN null ELSE {
  uuid: map_gpu.uuid, index: map_gpu.index, model: map_gpu.model, memory_mib: map_gpu.memory_mib,
  state: map_gpu.state, health: map_gpu.health, temperature_c: map_gpu.temperature_c,
  utilization_pct: map_gpu.utilization_pct, domain: map_domain.uuid, domain_kind: map_domain.kind,
  nic: map_nic.name, rail: map_nic.rail, nic_rate_gbps: map_nic.rate_gbps, via: map_aff.via,
  leaf: map_leaf_name, nic_state: map_nic.state, nvswitch_gbps: map_gpu.nvswitch_gbps,
  lease_expires_at: map_gpu.lease_expires_at, mig_mode: map_gpu.mig_mode, peers: map_peers,
  memory_used_mib: map_gpu.memory_used_mib,
  nvlink_errors: coalesce(map_gpu.nvlink_replay_errors, 0) + coalesce(map_gpu.nvlink_recovery_errors, 0)
    + coalesce(map_gpu.nvlink_crc_errors, 0),
  xid_errors: size(coalesce(map_gpu.xid_errors, [])),
  nic_errors: coalesce(map_nic.symbol_errors, 0) + coalesce(map_nic.link_downed, 0)
    + coalesce(map_nic.port_rcv_errors, 0)} END) AS map_gpus
OPTIONAL MATCH (map_site:Site)-[:HAS_CLUSTER]->(map_cluster:Cluster)
WHERE map_cluster.name = map_host.cluster
WITH keep, host_blocks, domain_blocks, collect(CASE WHEN map_host IS NULL THEN null ELSE {
  name: map_host.name, rack: map_host.rack, scalable_unit: map_host.scalable_unit, leaves: map_host.leaves,
  pod: map_host.pod, received_at: map_host.received_at, gpus: map_gpus, site: map_site.name} END) AS hosts
