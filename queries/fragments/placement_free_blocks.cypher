// Fragment (not a query): the cluster's largest free blocks, the $blocks hosts and the
// $blocks NVLink domains with the most free GPUs (ties by name), for the fragmentation facts.
// Each kind in two steps, so the work follows $blocks, not the cluster: probe free counts down
// from $host_top (or $domain_top), index seeks, until $blocks units are seen (0 is a sentinel
// that keeps one row when none is free); their smallest count is a floor, and a range seek from
// it, ordered, gives the answer. Whatever order the plan yields rows in, the floor is at most
// the true one, so the answer is exact. $host_top and $domain_top are hints, not bounds: the
// counts above them (a range seek, empty while the hint holds) are probed first, so a stale
// hint costs time, never a block. The engine passes the largest counts its reads have seen
// (a hint of 0, after a read of a full cluster, reads every unit with a free GPU once): at
// 100k GPUs probing down from the largest possible unit (128, 576) cost ~2 ms per statement.
// It follows a statement's one-row start, whose only
// variable is `block_carry` (the page of units the statement has chosen, or null: it carries
// nothing else, so its rows stay cheap), and ends with `WITH block_carry, host_blocks,
// domain_blocks`, one row (entries may be null maps). The page is chosen before it, not after:
// sorting thousands of candidate units with the two lists on every row cost FalkorDB ~9 ms per
// statement at 100k GPUs (3,300 domains with 4 free).
OPTIONAL MATCH (block_host:Host)
WHERE block_host.free_gpus > $host_top
WITH block_carry, collect(DISTINCT block_host.free_gpus) AS block_above
UNWIND block_above + range($host_top, 0, -1) AS block_want
OPTIONAL MATCH (block_host:Host)
WHERE block_want > 0 AND block_host.free_gpus = block_want
WITH block_carry, block_want, CASE WHEN block_want = 0 THEN '' ELSE block_host.name END AS block_unit
WHERE block_unit IS NOT NULL
WITH block_carry, block_want
LIMIT $blocks
WITH block_carry, min(block_want) AS host_floor
OPTIONAL MATCH (block_host:Host)
WHERE block_host.free_gpus >= host_floor AND block_host.free_gpus > 0
WITH block_carry, block_host
ORDER BY block_host.free_gpus DESC, block_host.name
LIMIT $blocks
WITH block_carry, collect({unit: block_host.name, free: block_host.free_gpus}) AS host_blocks
OPTIONAL MATCH (block_domain:NVLinkDomain)
WHERE block_domain.free_gpus > $domain_top
WITH block_carry, host_blocks, collect(DISTINCT block_domain.free_gpus) AS block_above
UNWIND block_above + range($domain_top, 0, -1) AS block_want
OPTIONAL MATCH (block_domain:NVLinkDomain)
WHERE block_want > 0 AND block_domain.free_gpus = block_want
WITH block_carry, host_blocks, block_want,
     CASE WHEN block_want = 0 THEN '' ELSE block_domain.uuid END AS block_unit
WHERE block_unit IS NOT NULL
WITH block_carry, host_blocks, block_want
LIMIT $blocks
WITH block_carry, host_blocks, min(block_want) AS domain_floor
OPTIONAL MATCH (block_domain:NVLinkDomain)
WHERE block_domain.free_gpus >= domain_floor AND block_domain.free_gpus > 0
WITH block_carry, host_blocks, block_domain
ORDER BY block_domain.free_gpus DESC, block_domain.uuid
LIMIT $blocks
WITH block_carry, host_blocks,
     collect({unit: block_domain.uuid, free: block_domain.free_gpus}) AS domain_blocks
