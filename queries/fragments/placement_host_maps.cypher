// Fragment (not a query): what placement needs of the hosts named in `names`, one map per host
// (never a host's fields repeated per GPU): its fabric position, freshness and site, and its
// free GPUs (state free, a reservation whose lease lapsed before $now, or one of
// $virtual_free, which a preemption plan may take), each with its NVLink domain, nearest NIC,
// rail, leaf and direct NVLink peers [uuid, GB/s] (links to NVSwitches are in nvswitch_gbps).
// In: `scanned`, `found`, `names` (one row). Out: `WITH scanned, found, host_blocks, domain_blocks, hosts`, one row.
UNWIND (CASE WHEN size(names) = 0 THEN [null] ELSE names END) AS map_name
OPTIONAL MATCH (map_host:Host {name: map_name})
OPTIONAL MATCH (map_host)-[:HAS_GPU]->(map_gpu:GPU)
WHERE map_gpu.state = 'free' OR map_gpu.uuid IN $virtual_free
  OR (map_gpu.state = 'reserved' AND map_gpu.lease_expires_at < $now)
OPTIONAL MATCH (map_gpu)-[:IN_DOMAIN]->(map_domain:NVLinkDomain)
OPTIONAL MATCH (map_gpu)-[map_aff:NIC_AFFINITY]->(map_nic:NIC)
WITH scanned, found, host_blocks, domain_blocks, map_host, collect(CASE WHEN map_gpu IS NULL THEN null ELSE {
  uuid: map_gpu.uuid, index: map_gpu.index, model: map_gpu.model, memory_mib: map_gpu.memory_mib,
  state: map_gpu.state, health: map_gpu.health, temperature_c: map_gpu.temperature_c,
  utilization_pct: map_gpu.utilization_pct, domain: map_domain.uuid, domain_kind: map_domain.kind,
  nic: map_nic.name, rail: map_nic.rail, nic_rate_gbps: map_nic.rate_gbps, via: map_aff.via,
  leaf: head([(map_nic)-[:UPLINK]->(map_leaf:Switch) | map_leaf.name]), nic_state: map_nic.state,
  nvswitch_gbps: map_gpu.nvswitch_gbps, lease_expires_at: map_gpu.lease_expires_at, mig_mode: map_gpu.mig_mode,
  peers: [(map_gpu)-[map_link:NVLINK]-(map_peer:GPU) | [map_peer.uuid, map_link.bandwidth_gbps]]} END) AS map_gpus
WITH scanned, found, host_blocks, domain_blocks, collect(CASE WHEN map_host IS NULL THEN null ELSE {
  name: map_host.name, rack: map_host.rack, scalable_unit: map_host.scalable_unit, leaves: map_host.leaves,
  pod: map_host.pod, received_at: map_host.received_at, gpus: map_gpus,
  site: head([(map_site:Site)-[:HAS_CLUSTER]->(map_cluster:Cluster) WHERE map_cluster.name = map_host.cluster | map_site.name])
  } END) AS hosts
