// Fragment (not a query): included with `//@include delta_tail` at the end of a write that
// flipped GPUs between free and not free, after `lock_counters` has write-locked every counter
// those GPUs feed. It moves each counter by how many of its GPUs flipped (hosts, NVLink domains,
// and every leaf above a host, as `recount_tail` defines them) instead of recounting every GPU
// under it: the counters are locked, so the deltas apply to the latest committed values. In:
// `carry` (any value to return), `moved` (the GPU nodes that flipped) and `sign` (-1: taken,
// +1: freed). Out: `WITH DISTINCT carry`, one row.
// A failed GPU is never counted free (docs/reservations.md, "Free means free and not failed"), so
// taking or freeing one moves no counter: `moved` is narrowed to the GPUs that are not failed.
WITH carry, sign, [x IN moved WHERE coalesce(x.health, 'ok') <> 'failed'] AS moved
UNWIND (CASE WHEN size(moved) = 0 THEN [null] ELSE moved END) AS dx
OPTIONAL MATCH (dh:Host)-[:HAS_GPU]->(dx)
WITH carry, sign, moved, dh, count(dx) AS dk
FOREACH (x IN CASE WHEN dh IS NULL THEN [] ELSE [dh] END | SET x.free_gpus = coalesce(x.free_gpus, 0) + sign * dk)
WITH carry, sign, moved, dh, dk
OPTIONAL MATCH (dh)-[:HAS_NIC]->(:NIC)-[:UPLINK]->(dleaf:Switch)
WITH DISTINCT carry, sign, moved, dh, dk, dleaf
WITH carry, sign, moved, dleaf, toInteger(sum(dk)) AS lk
FOREACH (x IN CASE WHEN dleaf IS NULL THEN [] ELSE [dleaf] END | SET x.free_gpus = coalesce(x.free_gpus, 0) + sign * lk)
WITH DISTINCT carry, sign, moved
UNWIND (CASE WHEN size(moved) = 0 THEN [null] ELSE moved END) AS dx
OPTIONAL MATCH (dx)-[:IN_DOMAIN]->(dd:NVLinkDomain)
WITH carry, sign, dd, count(dx) AS ddk
FOREACH (x IN CASE WHEN dd IS NULL THEN [] ELSE [dd] END | SET x.free_gpus = coalesce(x.free_gpus, 0) + sign * ddk)
WITH DISTINCT carry
