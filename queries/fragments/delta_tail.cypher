// Fragment (not a query): included with `//@include delta_tail` at the end of a write that
// flipped GPUs between free and not free, after `lock_counters` has write-locked every counter
// those GPUs feed. It moves each counter by how many of its GPUs flipped (hosts, NVLink domains,
// and every leaf above a host, as `recount_tail` defines them) instead of recounting every GPU
// under it: the counters are locked, so the deltas apply to the latest committed values. In:
// `carry` (any value to return), `moved` (the GPU nodes that flipped) and `sign` (-1: taken,
// +1: freed). Out: `WITH DISTINCT carry`, one row.
// A failed GPU is never counted free (docs/reservations.md, "Free means free and not failed"), so
// taking or freeing one moves no counter: `moved` is narrowed to the GPUs that are not failed.
// The per-GPU rows live inside subqueries that import only `moved` and `sign`: FalkorDB copies
// every variable of a row from one clause to the next, so rows that also carried `carry` and
// `moved` (lists) through the grouping copied them per GPU and hashed them as grouping keys. In
// subqueries the same statements cost FalkorDB 9-15% less (a batch of six reserves 2.65 -> 2.42 ms,
// of six releases 1.51 -> 1.29 ms; docs/benchmarks.md, "Stop 51").
// Traversals from bound nodes name no label at an end the schema allows one label at (a label test
// per row on FalkorDB; docs/store.md, "No label test the schema already makes").
WITH carry, sign, [x IN moved WHERE coalesce(x.health, 'ok') <> 'failed'] AS moved
CALL (moved, sign) {
  UNWIND moved AS dx
  MATCH (dh)-[:HAS_GPU]->(dx)
  WITH sign, dh, count(dx) AS dk
  SET dh.free_gpus = coalesce(dh.free_gpus, 0) + sign * dk
  WITH sign, dh, dk
  MATCH (dh)-[:HAS_NIC]->()-[:UPLINK]->(dleaf)
  WITH DISTINCT sign, dh, dk, dleaf
  WITH sign, dleaf, toInteger(sum(dk)) AS lk
  SET dleaf.free_gpus = coalesce(dleaf.free_gpus, 0) + sign * lk
  RETURN count(*) AS leaves_moved
}
CALL (moved, sign) {
  UNWIND moved AS dx
  MATCH (dx)-[:IN_DOMAIN]->(dd)
  WITH sign, dd, count(dx) AS ddk
  SET dd.free_gpus = coalesce(dd.free_gpus, 0) + sign * ddk
  RETURN count(*) AS domains_moved
}
WITH DISTINCT carry
