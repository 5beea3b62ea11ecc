// Single-host placement in one statement: the hosts that can hold $n GPUs of the request, in
// best-fit order, with what Python needs to choose and score (graphsvc/placement/engine.py).
// 1. Candidate hosts by their indexed free counter, exactly $first_size free first, then the
//    next size towards $last_size ($step -1: largest first, for spread packing); ties by
//    name, a page of $limit after $skip. The sizes are first probed lazily until $probe hosts
//    ($skip + $limit) are seen, so the ordered seek reads about a page of hosts, not every host with room.
// 2. In each, the free GPUs that meet the per-GPU constraints (fragment placement_usable)
//    are counted per NVLink domain: a host qualifies with $n of them ($mode 'none'), or $n in
//    one NVLink domain ($mode 'domain': NVLink any or full mesh; the clique itself is chosen in Python).
// 3. The cluster's largest free blocks (placement_free_blocks, read once the page is chosen) and the qualifying hosts'
//    free GPUs (placement_host_maps), `found` holding their names and free counts. `scanned` is the number of hosts read: fewer than $limit
//    means the seek is exhausted.
// No unit to read at all: no row. A host whose counter another transaction changes between two
// seeks (Neo4j reads committed data) is seen under two counts: the page is collected DISTINCT (else its
// GPUs count twice), after the LIMIT, so the dedupe costs the page, not the candidates (the page may
// then come back short, as when a count changes between the passes).
// The model prefilter: a unit whose model the engine knows ($known) passes when it is one of
// $prefilter_models (decided in Python: list membership, not a lower-case substring test per
// unit); any other model by the substring test (graphsvc.placement.engine.prefilter_params).
// @read
// @param blocks int
// @param domain_top int
// @param exclude list<string>
// @param filters map
// @param first_size int
// @param host_top int
// @param known list<string>
// @param last_size int
// @param limit int
// @param mode string
// @param model string
// @param n int
// @param now float
// @param prefilter_models list<string>
// @param probe int
// @param skip int
// @param stale_before float
// @param step int
// @param tie_buckets int
// @param virtual_free list<string>
// @row scanned int, found list<map>, hosts list<map>, host_blocks list<map>, domain_blocks list<map>
UNWIND range($first_size, $last_size, $step) AS want
MATCH (h:Host)
WHERE h.free_gpus = want AND NOT h.name IN $exclude AND ($model = '' OR h.gpu_model IN $prefilter_models
       OR (NOT coalesce(h.gpu_model, '') IN $known AND toLower(coalesce(h.gpu_model, '')) CONTAINS $model))
  AND coalesce(h.received_at, $now) >= $stale_before
WITH want
LIMIT $probe
WITH max(want) AS most, min(want) AS least
UNWIND range($first_size, coalesce(CASE WHEN $step > 0 THEN most ELSE least END, $first_size), $step) AS want
MATCH (h:Host)
WHERE h.free_gpus = want AND NOT h.name IN $exclude AND ($model = '' OR h.gpu_model IN $prefilter_models
       OR (NOT coalesce(h.gpu_model, '') IN $known AND toLower(coalesce(h.gpu_model, '')) CONTAINS $model))
  AND coalesce(h.received_at, $now) >= $stale_before
WITH h
ORDER BY abs(h.free_gpus - $first_size), h.name
SKIP $skip
LIMIT $limit
WITH collect(DISTINCT h) AS units
WHERE size(units) > 0
//@include placement_host_counts
//@include placement_free_blocks
WITH host_blocks, domain_blocks, [scanned, found] AS keep, [x IN found | x.unit] AS names
//@include placement_host_maps
RETURN keep[0] AS scanned, keep[1] AS found, hosts, host_blocks, domain_blocks
