// Whether a rail-aligned multi-host set of $n GPUs may exist by the counters: a leaf switch whose
// free counter (the free GPUs of the hosts cabled to it) is at least $n, or a switch of another
// tier that NICs are cabled to directly (it keeps no counter; the fabric allows such cabling).
// Every host of a rail-aligned set reaches the switch of a rail they share, so no such set is
// larger than that switch's counter: the wide search reads no host for a rail-aligned request
// when no row comes back (graphsvc.placement.engine, search_wider). The first part is an indexed
// seek on the counter, the second reads the few spine and core switches; any one row answers
// (existence only, nothing ranked).
// @read
// @param n int
// @row switch string
MATCH (s:Switch)
WHERE s.tier = 'leaf' AND s.free_gpus >= $n
RETURN s.name AS switch
LIMIT 1
UNION
MATCH (s:Switch)<-[:UPLINK]-(:NIC)
WHERE s.tier <> 'leaf'
RETURN s.name AS switch
LIMIT 1
