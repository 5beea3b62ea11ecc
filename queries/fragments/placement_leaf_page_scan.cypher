// Fragment (not a query): placement_leaf_page for a cluster of at most `engine.SCAN_BLOCKS_UP_TO`
// hosts: the same page, read by a scan of every switch instead of the free-count index, whose
// stale entries a scheduler's reservations grow (every reservation moves a leaf's counter): on
// one SU that seek took ~3.4 ms of the leaf statement after 25 s of reservations (docs/
// benchmarks.md, "Stop 42"). At 100k GPUs the seek reads nearly every leaf anyway, but the scan
// form measured ~5% slower there, so large clusters keep the seek. The predicates are the seek
// form's, each inside `coalesce(..., false)` (a null comparison filters the switch out either
// way), which keeps the planner off the indexes.
MATCH (s:Switch)
WHERE coalesce(s.tier = 'leaf', false) AND coalesce(s.free_gpus >= $min_free, false) AND coalesce(s.rail, 0) = 0
WITH s
ORDER BY s.free_gpus, s.name
SKIP $skip
LIMIT $limit
