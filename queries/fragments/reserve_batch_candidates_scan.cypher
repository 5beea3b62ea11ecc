// Fragment (not a query): reserve_batch_candidates on a cluster of at most
// `fastpath.SCAN_EVERY_HOST_UP_TO` hosts, read by a scan of every host, not by the free-count
// index: the same page per request size ($scan hosts of the fewest free GPUs that suffice, ties
// by name) and the same rows out. Why: on FalkorDB every counter write re-indexes its host, and
// the stale index entries stay until the index garbage collector (every 30 s), so an index seek
// walks every entry the reservations since then left; on one SU (31 hosts) each seek grew from
// ~0.08 to ~1-1.7 ms within 30 s of sustained reservations, while the scan reads 31 hosts each
// time. At ~500 hosts idle the two cost the same; at ~4,000 hosts half reserved the scan cost
// ~7 ms more per batch of six (docs/benchmarks.md, "Stop 40").
// `coalesce(h.free_gpus, -1)` keeps the planner off the index (a bare `h.free_gpus >= size` is an
// index range seek, the walk this form avoids); -1 and the 128 cap make the counts it accepts
// exactly those the seek form reads (range(size, 128); a host without a count is never read).
UNWIND $sizes AS size
CALL (size) {
  MATCH (h:Host)
  WHERE coalesce(h.free_gpus, -1) >= size AND coalesce(h.free_gpus, -1) <= 128 AND NOT h.name IN $exclude
    AND toLower(coalesce(h.gpu_model, '')) CONTAINS $model AND coalesce(h.received_at, $now) >= $stale_before
  WITH h, h.free_gpus AS want
  ORDER BY want, h.name
  LIMIT $scan
  RETURN h, want
}
