// reserve_in_host for a cluster of at most `fastpath.SCAN_EVERY_HOST_UP_TO` hosts: the candidates
// are read by a scan of every host, not by the free-count index (reserve_in_host_batch_scan says
// why). Same parameters, the same page ($scan hosts of the fewest free GPUs from $first_size to
// $last_size, ties by name), the same taking (reserve_in_host_take) and answer.
// `coalesce(h.free_gpus, -1)` keeps the planner off the index (a bare comparison is an index range
// seek, the walk this form avoids); a host without a count is never read, as by the seek form.
// @write
// @param exclude list<string>
// @param first_size int
// @param k int
// @param last_size int
// @param mode string
// @param model string
// @param models list<string>
// @param n int
// @param now float
// @param props map
// @param scan int
// @param slot int
// @param stale_before float
// @row id string, reservation map, taken any
MATCH (h:Host)
WHERE coalesce(h.free_gpus, -1) >= $first_size AND coalesce(h.free_gpus, -1) <= $last_size
  AND NOT h.name IN $exclude AND toLower(coalesce(h.gpu_model, '')) CONTAINS $model
  AND coalesce(h.received_at, $now) >= $stale_before
WITH h, h.free_gpus AS want
ORDER BY want, h.name
LIMIT $scan
//@include reserve_in_host_take
