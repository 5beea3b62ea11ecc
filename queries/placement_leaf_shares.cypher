// For the diagnosis of an unsplit rail-aligned request (graphsvc/placement/explain.py,
// _largest_aligned): what placement_leaf_holds answers, for every count and share at once. Per
// leaf switch whose free counter is at least $least_leaf, its counter and `held`: held[d - 1] is
// how many of its hosts (Host-[:HAS_NIC]->NIC-[:UPLINK]->leaf, counted once each) have at least d
// free GPUs by their counters, d = 1 up to its fullest host's counter. placement_leaf_holds says a
// leaf holds n GPUs d on each host when its counter is at least n, d divides n and d * held[d - 1]
// is at least n: the same counters, asked once here where each probe of a share no leaf holds
// scanned every leaf (`251xH100 rail-aligned` at 8k GPUs: four such probes, 10-40 ms each,
// docs/benchmarks.md "Stop 64"). Leaves alike are one row (`leaves`: how many): a scalable unit's
// rail leaves have the same hosts.
// @read
// @param least_leaf int
// @row leaf_counter int, held list<int>, leaves int
MATCH (s:Switch)
WHERE s.tier = 'leaf' AND s.free_gpus >= $least_leaf
CALL (s) {
  MATCH (s)<-[:UPLINK]-()<-[:HAS_NIC]-(h)
  WHERE h.free_gpus >= 1
  WITH DISTINCT h
  RETURN collect(h.free_gpus) AS free
}
WITH s, free, reduce(most = 0, f IN free | CASE WHEN f > most THEN f ELSE most END) AS top
WITH s.free_gpus AS leaf_counter, [d IN range(1, top) | size([f IN free WHERE f >= d])] AS held
RETURN toInteger(leaf_counter) AS leaf_counter, held, count(*) AS leaves
