// Whether a leaf switch's free counter (the free GPUs of the hosts cabled to it) is at least $n.
// Every host of a rail-aligned multi-host set reaches the switch of a rail they share, so where
// NICs are cabled to leaves only (placement_nics_off_leaf finds none), no such set is larger than
// the largest leaf counter: the wide search reads no host for a rail-aligned request when no row
// comes back (graphsvc.placement.engine, search_wider). An indexed seek on the counter; any one
// leaf answers (existence only, nothing ranked): one row or none.
// @read
// @param n int
// @row switch string
MATCH (s:Switch)
WHERE s.tier = 'leaf' AND s.free_gpus >= $n
RETURN s.name AS switch
LIMIT 1
