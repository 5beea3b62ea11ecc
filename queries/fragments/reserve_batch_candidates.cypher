// Fragment (not a query): the candidate hosts of a batch of single-host reserves, read by the
// free-count index (reserve_in_host_batch, reserve_release_batch); its twin
// reserve_batch_candidates_scan reads them by a scan of every host, and the registry derives
// each including query's `_scan` form with it (graphsvc/store/queries.py, "Scan forms";
// `fastpath.candidate_read` picks the form by the cluster's size). In: `$sizes`, `$exclude`,
// `$model`, `$now`, `$stale_before`, `$scan`. Out: rows of (`h`, `want`).
// They are read once for the batch: for each distinct request size in it ($sizes), the page of
// at most $scan hosts that fit that size best (a subquery per size; one page for the smallest
// size alone left a batch's larger requests no host on a cluster in use, whose best fits for one
// GPU hold one or two, and sent them one by one down the single path). Each page is read in two
// passes: a first streaming pass over the exact free counts stops after $scan hosts, and its
// largest count bounds the sorted second pass, which reads only the hosts whose counts lie within
// it (all of them when most hosts share that count, as on an idle cluster); any order the plan
// yields rows in gives a bound at least the true one, and none seen gives an empty range. Sorting
// every host with a free GPU cost ~1.3 ms more per cycle at 4,096 hosts half reserved,
// docs/benchmarks.md stop 33. Under Neo4j's read committed isolation a count may change between
// the passes (fewer candidates, and the requests not served go on alone) and between two seeks of
// one statement (a host seen under two counts, in two size pages or twice in one:
// reserve_batch_take groups by host).
UNWIND $sizes AS size
CALL (size) {
  UNWIND range(size, 128) AS want
  MATCH (h:Host)
  WHERE h.free_gpus = want AND NOT h.name IN $exclude AND toLower(coalesce(h.gpu_model, '')) CONTAINS $model
    AND coalesce(h.received_at, $now) >= $stale_before
  WITH size, want
  LIMIT $scan
  WITH size, max(want) AS most
  UNWIND range(size, coalesce(most, size - 1)) AS want
  MATCH (h:Host)
  WHERE h.free_gpus = want AND NOT h.name IN $exclude AND toLower(coalesce(h.gpu_model, '')) CONTAINS $model
    AND coalesce(h.received_at, $now) >= $stale_before
  WITH h, want
  ORDER BY want, h.name
  LIMIT $scan
  RETURN h, want
}
