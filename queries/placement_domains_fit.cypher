// Single-domain placement in one statement (the whole set in one NVLink domain: an HGX board,
// an NVL72 clique spanning trays): the domains that can hold $n GPUs of the request, in
// best-fit order, with what Python needs to choose and score (graphsvc/placement/engine.py).
// 1. Candidate domains by their indexed free counter, exactly $first_size free first, then the
//    next size towards $last_size ($step -1: largest first); ties by (tie_bucket, uuid), a page
//    of $limit after $skip. Three lazy passes, so the work follows the page, not the ties (3,300
//    domains hold exactly 4 free GPUs at 100k: reading and sorting them all cost ~5 ms): the
//    sizes are probed until $probe domains ($skip + $limit) are seen, which gives the sizes that
//    hold any (a domain without a bucket, which the later passes cannot seek, is not counted);
//    then those sizes' buckets ($tie_buckets a size, index seeks on both properties)
//    until $probe domains are seen, which gives the last (size, bucket) key the page can reach;
//    then every domain up to that key is read (the last bucket whole, so the tie order is exact)
//    and sorted (placement_domain_page; its `_scan` form reads them by a scan,
//    placement_domain_page_scan).
// 2. In each, the free GPUs that meet the per-GPU constraints (fragment placement_usable) on
//    hosts neither excluded nor stale are counted: a domain qualifies with $n of them. Which
//    $n form a full mesh (any members of a switched domain; a clique on direct links) is
//    chosen in Python.
// 3. The cluster's largest free blocks (placement_free_blocks, read once the page is chosen) and the free GPUs of every host
//    holding a usable GPU of a qualifying domain (placement_host_maps), each host once;
//    `found` holds the domains, their free counts and those hosts. `scanned` is the number of
//    domains read: fewer than $limit means the seek is exhausted.
// No unit to read at all: no row. A domain whose counter another transaction changes between two
// seeks (Neo4j reads committed data) is seen under two counts: the page is collected DISTINCT, after the
// LIMIT (see placement_hosts_fit).
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
//@include placement_domain_page
WITH collect(DISTINCT d) AS units
WHERE size(units) > 0
//@include placement_domain_counts
//@include placement_free_blocks
WITH host_blocks, domain_blocks, [scanned, found] AS keep,
     reduce(acc = [], x IN found | acc + [m IN x.hosts WHERE NOT m IN acc]) AS names
//@include placement_host_maps
RETURN keep[0] AS scanned, keep[1] AS found, hosts, host_blocks, domain_blocks
