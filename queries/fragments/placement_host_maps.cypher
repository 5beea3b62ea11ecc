// Fragment (not a query): what placement needs of the hosts named in `names`, one map per host
// (never a host's fields repeated per GPU): its fabric position, freshness and site, and its
// free GPUs (state free, a reservation whose lease lapsed before $now, or one of
// $virtual_free, which a preemption plan may take), each with its NVLink domain, nearest NIC,
// rail, leaf and direct NVLink peers [uuid, GB/s] (links to NVSwitches are in nvswitch_gbps), its
// memory in use and error counts (the same sums as placement_host_gpus: scoring weighs them).
// Each GPU is a list, not a map: the keys of ~300 GPU maps were ~40% of a multi-host reply
// (190 KB at 8k GPUs) and of FalkorDB's time building it. Its fields, in this order:
// gpu: uuid, index, model, memory_mib, state, health, temperature_c, utilization_pct, domain,
//   domain_kind, nic, rail, nic_rate_gbps, via, leaf, nic_state, nvswitch_gbps, lease_expires_at,
//   mig_mode, peers, memory_used_mib, nvlink_errors, xid_errors, nic_errors
// (graphsvc.placement.model.HOST_MAP_GPU_FIELDS; a unit test holds the two equal).
// OPTIONAL MATCH, not pattern comprehensions: on FalkorDB a comprehension per GPU costs ~10x.
// In a subquery of `names` alone (each name read once): the values the statement carries past it
// (`keep`, the blocks) would otherwise be grouping keys of every aggregation here, hashed and
// copied per GPU row; in GRAPH.PROFILE of a 32-GPU leaf statement at 8k GPUs those aggregations
// took ~6.5 of ~16 ms of operator time (docs/benchmarks.md, stop 33).
// FalkorDB runs `CALL { WITH names ...` (it has no scope clause; graphsvc/store/queries.py,
// "Dialect").
// In: `keep` (any value carried through), `host_blocks`, `domain_blocks`, `names`. Out:
// `WITH keep, host_blocks, domain_blocks, hosts`, one row per input row.
CALL (names) {
  UNWIND (CASE WHEN size(names) = 0 THEN [null] ELSE names END) AS map_name
  WITH DISTINCT map_name
  OPTIONAL MATCH (map_host:Host {name: map_name})
  OPTIONAL MATCH (map_host)-[:HAS_GPU]->(map_gpu:GPU)
  WHERE map_gpu.state = 'free' OR map_gpu.uuid IN $virtual_free
    OR (map_gpu.state = 'reserved' AND map_gpu.lease_expires_at < $now)
  OPTIONAL MATCH (map_gpu)-[:IN_DOMAIN]->(map_domain:NVLinkDomain)
  OPTIONAL MATCH (map_gpu)-[map_aff:NIC_AFFINITY]->(map_nic:NIC)
  OPTIONAL MATCH (map_nic)-[:UPLINK]->(map_leaf:Switch)
  OPTIONAL MATCH (map_gpu)-[map_link:NVLINK]-(map_peer:GPU)
  WITH map_host, map_gpu, map_domain, map_aff, map_nic,
       min(map_leaf.name) AS map_leaf_name,
       collect(CASE WHEN map_peer IS NULL THEN null ELSE [map_peer.uuid, map_link.bandwidth_gbps] END) AS map_peers
  WITH map_host, collect(CASE WHEN map_gpu IS NULL THEN null ELSE [
    map_gpu.uuid, map_gpu.index, map_gpu.model, map_gpu.memory_mib, map_gpu.state, map_gpu.health,
    map_gpu.temperature_c, map_gpu.utilization_pct, map_domain.uuid, map_domain.kind, map_nic.name, map_nic.rail,
    map_nic.rate_gbps, map_aff.via, map_leaf_name, map_nic.state, map_gpu.nvswitch_gbps, map_gpu.lease_expires_at,
    map_gpu.mig_mode, map_peers, map_gpu.memory_used_mib,
    coalesce(map_gpu.nvlink_replay_errors, 0) + coalesce(map_gpu.nvlink_recovery_errors, 0)
      + coalesce(map_gpu.nvlink_crc_errors, 0),
    size(coalesce(map_gpu.xid_errors, [])),
    coalesce(map_nic.symbol_errors, 0) + coalesce(map_nic.link_downed, 0) + coalesce(map_nic.port_rcv_errors, 0)
  ] END) AS map_gpus
  OPTIONAL MATCH (map_site:Site)-[:HAS_CLUSTER]->(map_cluster:Cluster)
  WHERE map_cluster.name = map_host.cluster
  RETURN collect(CASE WHEN map_host IS NULL THEN null ELSE {
    name: map_host.name, rack: map_host.rack, scalable_unit: map_host.scalable_unit, leaves: map_host.leaves,
    pod: map_host.pod, received_at: map_host.received_at, gpus: map_gpus, site: map_site.name} END) AS hosts
}
WITH keep, host_blocks, domain_blocks, hosts
