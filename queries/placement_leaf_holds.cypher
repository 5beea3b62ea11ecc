// Whether a leaf switch's hosts can hold a rail-aligned set of $n GPUs by their free counters.
// Every host of a rail-aligned multi-host set reaches the switch of a rail they share, so where
// NICs are cabled to leaves only (placement_nics_off_leaf finds none), such a set lies among one
// leaf's hosts: the leaf's counter (the free GPUs of the hosts cabled to it) is at least $n, and
// $n / d of its hosts hold the same share d each: d = $share, or with no per-host share ($share
// 0) any d that divides $n (1 up to the leaf's fullest host). A prime count above a host's takes
// one GPU on each of that many hosts, more than a leaf has (251 GPUs: 251 hosts): counting the
// hosts refuses it here, where the counter alone (a 32-host unit holds 256) sent the wide search
// reading every host of the cluster (docs/benchmarks.md, "Stop 60"). The wide search reads no
// host for a rail-aligned request when no row comes back (graphsvc.placement.engine,
// search_wider). Leaves by an indexed seek on the counter, each leaf's hosts along the fabric
// (Host-[:HAS_NIC]->NIC-[:UPLINK]->leaf); any one leaf answers (existence only, nothing ranked):
// one row or none.
// A leaf's hosts are read only where its NICs (cables in: at least its hosts) let some share d
// through: d * NICs at least $n for a share d below $n (`shares`, listed once), or some host
// anywhere has $n free for the share $n (`whole`, one index seek). The hosts decide as before;
// this only skips leaves they could not satisfy. `251xH100 rail-aligned` on 32-host units (shares
// 1 and 251: 251 hosts, or one host of 251 GPUs) read every leaf's hosts to find none, ~11 ms of
// the store's time at 8k GPUs, on a reserve's path; the NICs are counted in ~1.5 ms.
// @read
// @param n int
// @param share int
// @row switch string
OPTIONAL MATCH (b:Host)
WHERE b.free_gpus >= $n
WITH b IS NOT NULL AS big
LIMIT 1
WITH big AND ($share = 0 OR $share = $n) AS whole,
     [d IN range(1, $n / 2) WHERE $n % d = 0 AND ($share = 0 OR d = $share)] AS shares
MATCH (s:Switch)
WHERE s.tier = 'leaf' AND s.free_gpus >= $n
MATCH (s)<-[:UPLINK]-(nic)
WITH s, whole, shares, count(nic) AS nics
WITH s, whole OR any(d IN shares WHERE d * nics >= $n) AS may
WHERE may
CALL (s) {
  MATCH (s)<-[:UPLINK]-()<-[:HAS_NIC]-(h)
  WHERE h.free_gpus >= CASE WHEN $share > 0 THEN $share ELSE 1 END
  WITH DISTINCT h
  RETURN collect(h.free_gpus) AS free
}
WITH s, free, reduce(most = 0, f IN free | CASE WHEN f > most THEN f ELSE most END) AS top
WHERE any(d IN range(1, top) WHERE ($share = 0 OR d = $share) AND $n % d = 0
                                   AND d * size([f IN free WHERE f >= d]) >= $n)
RETURN s.name AS switch
LIMIT 1
