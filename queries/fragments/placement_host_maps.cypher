// Fragment (not a query): what placement needs to know now of the hosts named in `names`, one map
// per host (never a host's fields repeated per GPU): its freshness, site and topology key, and its
// free GPUs (state free, a reservation whose lease lapsed before $now, or one of $virtual_free,
// which a preemption plan may take) with what changes between host documents: state, health,
// load, lease, memory in use and error counts (the same sums as placement_host_gpus: scoring
// weighs them).
// What changes only with a host's document or its cluster's fabric (each GPU's index, model,
// NVLink domain, nearest NIC with its rail, state and leaf, NVLink peers; the host's rack and
// fabric position) is not read here: the engine keeps it per host under `topology`
// (graphsvc.placement.topology_cache), the host's facts_fingerprint (every full host document
// that changes any of it changes the fingerprint) and fabric_digest (ingest_fabric: a digest of
// the host's cables and fabric position), and reads it with placement_host_topology for a host whose key it
// lacks. A host without a fingerprint (never ingested whole) has no key and is read each time.
// Leaving the per-GPU traversals to NVLink peers, domain, NIC and leaf out halved the reply and
// cut the 32-GPU leaf statement's store time by ~40% at 8k GPUs (docs/benchmarks.md, stop 36).
// Each GPU is a list, not a map (the keys of ~300 GPU maps were ~40% of a multi-host reply).
// Its fields, in this order:
// gpu: uuid, state, health, temperature_c, utilization_pct, lease_expires_at, memory_used_mib,
//   nvlink_errors, xid_errors
// (graphsvc.placement.model.HOST_MAP_LIVE_FIELDS; a unit test holds the two equal).
// In a subquery of `names` alone (each name read once): the values the statement carries past it
// (`keep`, the blocks) would otherwise be grouping keys of every aggregation here, hashed and
// copied per GPU row (docs/benchmarks.md, stop 33).
// The site is looked up once per cluster of the named hosts, before their GPUs are read: looked
// up per host (a Site-Cluster traversal filtered on the host's cluster) it cost ~1.5 ms of a
// 40-host multi-host statement at 100k GPUs (docs/benchmarks.md, stop 37). An unknown name
// yields no host (its cluster is null, and so is its site), never a null entry. DISTINCT: a
// cluster seen under one site twice (a duplicated edge) still gives each host one entry.
// FalkorDB runs `CALL { WITH names ...` (it has no scope clause; graphsvc/store/queries.py,
// "Dialect").
// In: `keep` (any value carried through), `host_blocks`, `domain_blocks`, `names`. Out:
// `WITH keep, host_blocks, domain_blocks, hosts`, one row per input row.
// Traversals from bound nodes name no label at an end the schema allows one label at (a label test
// per row on FalkorDB; docs/store.md, "No label test the schema already makes").
CALL (names) {
  UNWIND (CASE WHEN size(names) = 0 THEN [null] ELSE names END) AS map_name
  WITH DISTINCT map_name
  OPTIONAL MATCH (map_host:Host {name: map_name})
  WITH map_host.cluster AS map_cluster_name, collect(map_host) AS map_hosts
  OPTIONAL MATCH (map_site:Site)-[:HAS_CLUSTER]->(map_cluster:Cluster {name: map_cluster_name})
  UNWIND map_hosts AS map_host
  WITH DISTINCT map_host, map_site.name AS map_site_name
  OPTIONAL MATCH (map_host)-[:HAS_GPU]->(map_gpu)
  WHERE map_gpu.state = 'free' OR map_gpu.uuid IN $virtual_free
    OR (map_gpu.state = 'reserved' AND map_gpu.lease_expires_at < $now)
  WITH map_host, map_site_name, collect(CASE WHEN map_gpu IS NULL THEN null ELSE [
    map_gpu.uuid, map_gpu.state, map_gpu.health, map_gpu.temperature_c, map_gpu.utilization_pct,
    map_gpu.lease_expires_at, map_gpu.memory_used_mib,
    coalesce(map_gpu.nvlink_replay_errors, 0) + coalesce(map_gpu.nvlink_recovery_errors, 0)
      + coalesce(map_gpu.nvlink_crc_errors, 0),
    size(coalesce(map_gpu.xid_errors, []))
  ] END) AS map_gpus
  RETURN collect({
    name: map_host.name, received_at: map_host.received_at, site: map_site_name, gpus: map_gpus,
    topology: map_host.facts_fingerprint + '/' + coalesce(map_host.fabric_digest, '')}) AS hosts
}
WITH keep, host_blocks, domain_blocks, hosts
