// Fragment (not a query): the cluster's largest free blocks, the $blocks hosts and the
// $blocks NVLink domains with the most free GPUs (ties by tie_bucket, then name), for the
// fragmentation facts. Each kind in three lazy passes, so the work follows $blocks, not the
// cluster (448 units tie at 8 free at 100k GPUs; reading and sorting them all cost ~2 ms):
// 1. probe free counts down from $host_top (or $domain_top), index seeks, until $blocks units
//    are seen: the counts that hold any (0 is a sentinel that keeps one row when none is free;
//    its bucket is one past the last, so its key stays the largest).
//    The counts above the hint are sorted first, so this pass meets every count in descending
//    order and sees every count the answer can reach. Units without a bucket are not counted.
// 2. those counts' buckets, largest count first ($tie_buckets a count, each one index seek on
//    both properties), until $blocks units are seen: the last (count, bucket) key the answer
//    reaches. An empty bucket's row is dropped on a projected value (FalkorDB folds a WHERE on
//    an OPTIONAL MATCH variable back into the match; docs/architecture.md).
// 3. every unit up to that key (the last bucket whole), sorted, one entry per unit (Neo4j,
//    reading committed data, can see a unit under two counts when a write commits between two
//    seeks). Entries are never null maps; a cluster with nothing free gives empty lists.
// $host_top and $domain_top are hints, not bounds: the counts above them (a range seek, empty
// while the hint holds) are probed first, so a stale hint costs time, never a block. The engine
// passes the largest counts its reads have seen (a hint of 0, after a read of a full cluster,
// reads every unit with a free GPU once): at 100k GPUs probing down from the largest possible
// unit (128, 576) cost ~2 ms per statement.
// A subquery that imports nothing (an empty scope clause), included where the statement has one row: it
// adds `host_blocks` and `domain_blocks` to that row. Its own rows carry only its own values,
// whatever the statement holds by then (FalkorDB copies a row's values from clause to clause:
// when the page of units crossed these clauses as the one carried variable, the blocks cost
// ~1 ms more at 100k GPUs, docs/benchmarks.md stop 37). The statements include it after their
// units are evaluated, also in subqueries, so the two lists never ride on a per-unit or per-GPU
// row either (as grouping keys they were hashed and copied per row: sorting thousands of
// candidate units with them cost FalkorDB ~9 ms per statement at 100k GPUs).
CALL () {
  OPTIONAL MATCH (block_host:Host)
  WHERE block_host.free_gpus > $host_top
  WITH collect(DISTINCT block_host.free_gpus) AS block_above
  UNWIND block_above + [NULL] AS block_count
  WITH block_count
  ORDER BY block_count DESC
  WITH collect(block_count) AS block_above
  UNWIND block_above + range($host_top, 0, -1) AS block_want
  OPTIONAL MATCH (block_host:Host)
  WHERE block_want > 0 AND block_host.free_gpus = block_want AND block_host.tie_bucket IS NOT NULL
  WITH block_want, CASE WHEN block_want = 0 THEN '' ELSE block_host.name END AS block_unit
  WHERE block_unit IS NOT NULL
  WITH block_want
  LIMIT $blocks
  WITH [w IN collect(DISTINCT block_want) WHERE w > 0] + [0] AS block_wants
  UNWIND block_wants AS block_want
  UNWIND CASE WHEN block_want = 0 THEN [$tie_buckets + 1] ELSE range(1, $tie_buckets) END AS block_bucket
  OPTIONAL MATCH (block_host:Host)
  WHERE block_want > 0 AND block_host.free_gpus = block_want AND block_host.tie_bucket = block_bucket
  WITH block_wants, block_want, block_bucket,
       CASE WHEN block_want = 0 THEN '' ELSE block_host.name END AS block_unit
  WHERE block_unit IS NOT NULL
  WITH block_wants, (1000000 - block_want) * $tie_buckets + block_bucket AS block_key
  LIMIT $blocks
  WITH block_wants, max(block_key) AS block_last
  UNWIND block_wants AS block_want
  UNWIND CASE WHEN block_want = 0 THEN [$tie_buckets + 1] ELSE range(1, $tie_buckets) END AS block_bucket
  WITH block_want, block_bucket
  WHERE (1000000 - block_want) * $tie_buckets + block_bucket <= block_last
  OPTIONAL MATCH (block_host:Host)
  WHERE block_want > 0 AND block_host.free_gpus = block_want AND block_host.tie_bucket = block_bucket
  WITH DISTINCT block_host
  ORDER BY block_host IS NULL, block_host.free_gpus DESC, block_host.tie_bucket, block_host.name
  LIMIT $blocks
  WITH collect(CASE WHEN block_host IS NOT NULL THEN {unit: block_host.name, free: block_host.free_gpus} END) AS host_blocks
  OPTIONAL MATCH (block_domain:NVLinkDomain)
  WHERE block_domain.free_gpus > $domain_top
  WITH host_blocks, collect(DISTINCT block_domain.free_gpus) AS block_above
  UNWIND block_above + [NULL] AS block_count
  WITH host_blocks, block_count
  ORDER BY block_count DESC
  WITH host_blocks, collect(block_count) AS block_above
  UNWIND block_above + range($domain_top, 0, -1) AS block_want
  OPTIONAL MATCH (block_domain:NVLinkDomain)
  WHERE block_want > 0 AND block_domain.free_gpus = block_want AND block_domain.tie_bucket IS NOT NULL
  WITH host_blocks, block_want, CASE WHEN block_want = 0 THEN '' ELSE block_domain.uuid END AS block_unit
  WHERE block_unit IS NOT NULL
  WITH host_blocks, block_want
  LIMIT $blocks
  WITH host_blocks, [w IN collect(DISTINCT block_want) WHERE w > 0] + [0] AS block_wants
  UNWIND block_wants AS block_want
  UNWIND CASE WHEN block_want = 0 THEN [$tie_buckets + 1] ELSE range(1, $tie_buckets) END AS block_bucket
  OPTIONAL MATCH (block_domain:NVLinkDomain)
  WHERE block_want > 0 AND block_domain.free_gpus = block_want AND block_domain.tie_bucket = block_bucket
  WITH host_blocks, block_wants, block_want, block_bucket,
       CASE WHEN block_want = 0 THEN '' ELSE block_domain.uuid END AS block_unit
  WHERE block_unit IS NOT NULL
  WITH host_blocks, block_wants, (1000000 - block_want) * $tie_buckets + block_bucket AS block_key
  LIMIT $blocks
  WITH host_blocks, block_wants, max(block_key) AS block_last
  UNWIND block_wants AS block_want
  UNWIND CASE WHEN block_want = 0 THEN [$tie_buckets + 1] ELSE range(1, $tie_buckets) END AS block_bucket
  WITH host_blocks, block_want, block_bucket
  WHERE (1000000 - block_want) * $tie_buckets + block_bucket <= block_last
  OPTIONAL MATCH (block_domain:NVLinkDomain)
  WHERE block_want > 0 AND block_domain.free_gpus = block_want AND block_domain.tie_bucket = block_bucket
  WITH DISTINCT host_blocks, block_domain
  ORDER BY block_domain IS NULL, block_domain.free_gpus DESC, block_domain.tie_bucket, block_domain.uuid
  LIMIT $blocks
  WITH host_blocks,
       collect(CASE WHEN block_domain IS NOT NULL THEN {unit: block_domain.uuid, free: block_domain.free_gpus} END) AS domain_blocks
  RETURN host_blocks, domain_blocks
}
