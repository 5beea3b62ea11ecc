// Whether any NIC is cabled straight to a spine or core switch (the fabric allows it). Such a
// switch keeps no free-GPU counter, so the leaf counters do not bound the rail-aligned sets of
// hosts cabled that way (placement_leaf_holds, counting.FreeBounds). Reads the spine and core
// switches' incoming cables: ~27 ms at 100k GPUs (1,584 such switches), so it is read only for
// rail-aligned requests, once per request. One row or none.
// @read
// @row switch string
MATCH (s:Switch)<-[:UPLINK]-(:NIC)
WHERE s.tier <> 'leaf'
RETURN s.name AS switch
LIMIT 1
