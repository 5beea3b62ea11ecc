// Fragment (not a query): placement_free_blocks for a cluster of at most
// `engine.SCAN_BLOCKS_UP_TO` hosts. The same two lists (the $blocks hosts and the $blocks NVLink
// domains with the most free GPUs, ties by tie_bucket, then name; only units with a free GPU and a
// bucket in 1..$tie_buckets), read by a scan of every host and every domain instead of index seeks
// per free count and bucket. Why: on FalkorDB every counter write re-indexes its unit and the stale
// entries stay until the index garbage collector (every 30 s), so while a scheduler reserves and
// releases, each of placement_free_blocks' seeks walks what the reservations since then left: on
// one SU its 4-5 seeks grew from ~0.2 to ~2.5-3 ms of a placement statement within 25 s of
// reservations, while a scan reads 31 hosts and 31 domains each time (docs/benchmarks.md,
// "Stop 41" and "Stop 42"). At 100k GPUs the scan is several times slower than the seeks.
// The registry derives each including statement's `_scan` form from it (graphsvc.store.queries,
// SCAN_FORMS): the statement is otherwise the same, with the parameters it still uses.
// `coalesce(...)` keeps the planner off the indexes (the walk this form avoids): a bare
// `tie_bucket IN range(...)` was an index scan that cost ~4 ms of a statement after churn.
CALL () {
  OPTIONAL MATCH (block_host:Host)
  WHERE coalesce(block_host.free_gpus, -1) > 0 AND coalesce(block_host.tie_bucket, -1) IN range(1, $tie_buckets)
  WITH block_host
  ORDER BY block_host IS NULL, block_host.free_gpus DESC, block_host.tie_bucket, block_host.name
  LIMIT $blocks
  WITH collect(CASE WHEN block_host IS NOT NULL THEN {unit: block_host.name, free: block_host.free_gpus} END) AS host_blocks
  OPTIONAL MATCH (block_domain:NVLinkDomain)
  WHERE coalesce(block_domain.free_gpus, -1) > 0 AND coalesce(block_domain.tie_bucket, -1) IN range(1, $tie_buckets)
  WITH host_blocks, block_domain
  ORDER BY block_domain IS NULL, block_domain.free_gpus DESC, block_domain.tie_bucket, block_domain.uuid
  LIMIT $blocks
  WITH host_blocks,
       collect(CASE WHEN block_domain IS NOT NULL THEN {unit: block_domain.uuid, free: block_domain.free_gpus} END) AS domain_blocks
  RETURN host_blocks, domain_blocks
}
