// For the diagnosis of an unsplit rail-aligned request (graphsvc/placement/counting.py,
// LeafShareBound): per leaf switch whose free counter is at least $least_leaf, its counter and how
// many NICs are cabled to it (UPLINK edges in). A leaf's hosts are at most its NICs, so k hosts of
// a share fit under it only where k is at most both its NICs and its counter over the share: a
// bound placement_leaf_shares (which reads every leaf's hosts) can only lower. `251xH100
// rail-aligned` at 8k GPUs asks 50 x 5, 83 x 3, 125 x 2 and 249 x 1 hosts of 32-host units: this
// rules them out in ~1.5 ms of the store's time, where placement_leaf_shares took 12-14 ms
// (docs/benchmarks.md). Leaves alike are one row (`leaves`: how many).
// @read
// @param least_leaf int
// @row leaf_counter int, nics int, leaves int
MATCH (s:Switch)
WHERE s.tier = 'leaf' AND s.free_gpus >= $least_leaf
MATCH (s)<-[:UPLINK]-(nic)
WITH s, count(nic) AS nics
RETURN toInteger(s.free_gpus) AS leaf_counter, nics, count(*) AS leaves
