// Match and take in one statement: $n GPUs of one host (the common single-host shape), or
// nothing and no row, on a cluster of more hosts than `fastpath.SCAN_EVERY_HOST_UP_TO` (smaller
// ones: reserve_in_host_scan, the same but for how the candidates are read). Candidates are read
// like placement_hosts_by_free (index seeks on the host free counter, best fit first, $scan hosts
// at most; a first streaming pass that stops after $scan hosts bounds the counts the sorted second
// pass reads, as in reserve_in_host_batch); reserve_in_host_take takes the request from them.
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
UNWIND range($first_size, $last_size) AS want
MATCH (h:Host)
WHERE h.free_gpus = want AND NOT h.name IN $exclude AND toLower(coalesce(h.gpu_model, '')) CONTAINS $model
  AND coalesce(h.received_at, $now) >= $stale_before
WITH want
LIMIT $scan
WITH max(want) AS most
UNWIND range($first_size, coalesce(most, $first_size - 1)) AS want
MATCH (h:Host)
WHERE h.free_gpus = want AND NOT h.name IN $exclude AND toLower(coalesce(h.gpu_model, '')) CONTAINS $model
  AND coalesce(h.received_at, $now) >= $stale_before
WITH h, want
ORDER BY want, h.name
LIMIT $scan
//@include reserve_in_host_take
