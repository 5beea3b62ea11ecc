// Fragment (not a query): placement_leaf_page for a cluster of at most `engine.SCAN_BLOCKS_UP_TO`
// hosts: the same page, read by a scan of every switch instead of the free-count index, whose
// stale entries a scheduler's reservations grow (every reservation moves a leaf's counter): on
// one SU that seek took ~3.4 ms of the leaf statement after 25 s of reservations, and the
// statement's scan form 2.7 ms in all against 10.5 for the seek form (docs/benchmarks.md,
// "Stop 42"). At 100k GPUs the seek reads 3,128 of 4,712 switches anyway, but the scan measured
// no faster there (p50 12.4 against 11.3 ms, on a busy machine), so large clusters keep the seek. The predicates are the seek
// form's, each inside `coalesce(..., false)` (a null comparison filters the switch out either
// way), which keeps the planner off the indexes.
MATCH (s:Switch)
WHERE coalesce(s.tier = 'leaf', false) AND coalesce(s.free_gpus >= $min_free, false)
  AND (coalesce(s.rail, 0) = 0 OR coalesce(s.home_leaf, false))
WITH s
ORDER BY CASE WHEN $fullest_leaves THEN -s.free_gpus ELSE s.free_gpus END, s.name
SKIP $skip
LIMIT $limit
