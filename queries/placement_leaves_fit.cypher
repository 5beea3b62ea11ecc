// Multi-host placement under one leaf switch in one statement (hosts one IB hop apart): the
// leaves whose hosts can hold the request, best fit first, with what Python needs to choose.
// 1. Candidate leaves by their indexed free counter (enough: $min_free; the fewest first, ties
//    by name; the most first with $fullest_leaves, a probe's order, PlacementEngine.fits), one
//    per rail group (on a rail-optimised fabric every rail leaf of a scalable unit has the same
//    hosts: rail-0 leaves and hosts' first leaves, Switch.home_leaf), a page of $limit after
//    $skip (placement_leaf_page; its `_scan` form reads them by a scan, placement_leaf_page_scan).
// 2. Each leaf's hosts along the fabric, Host-[:HAS_NIC]->NIC-[:UPLINK]->leaf, with at least
//    $host_min free GPUs (the per-host share), neither excluded nor stale, of the model:
//    `members`, [name, free] in the order Python fills hosts (fullest first when
//    $fullest_first, else best fit; ties by name).
// 3. The free GPUs of each leaf's first hosts (placement_host_maps, once for all the leaves'
//    windows; a host under two of them is read once): the hosts that cover
//    $gpus by their counters ($per_host 0: no per-host share) or $need of them (a per-host
//    share), and $extra more; Python reads further hosts only if those do not do. A leaf whose
//    hosts cannot hold the request by those counters (too few hosts with the share, or too few
//    free GPUs on the hosts that qualify: its own counter also counts excluded, stale and other
//    models' hosts) has no window: none of its hosts is read (a diagnosis probing counts just
//    above a unit's read every host of every leaf, stop 59). A rail-aligned request with no
//    per-host share ($even) puts the same share d on each of $gpus / d hosts: a leaf none of
//    whose shares d (1 up to its fullest host's counter, dividing $gpus) has that many hosts
//    whose counters hold d has no window either (a prime count above a host takes one GPU on
//    each of that many hosts, more than a unit has). With $ready (a diagnosis's probe,
//    PlacementEngine.fits) or the per-GPU bounds the defaults ($filters.plain, below), the same
//    rules hold for the members' `usable` GPUs too: their free GPUs (those the host maps read)
//    that pass the per-GPU constraints the store can judge (fragment placement_usable, $filters
//    with rail_up: a sound prefilter of what Python takes): $need hosts hold the share, an even
//    split, or they hold $gpus. At 8k GPUs about 1% degraded, most 32-host units held 31 x 8 by
//    their counters and not by their GPUs: the probe of `248xH100 per-host=8 rail-aligned` read
//    and parsed ~340 hosts' GPU maps for ten such units (docs/benchmarks.md, "Stop 64"); `place`
//    read ~500 for it, ~0.25-0.34 s, and for `256xH100 rail-aligned` (an even split) ~0.2-0.29
//    s, for windows Python then refused ("Stop 68"). A leaf's GPUs are tested only where its
//    members with no impaired GPU (`clean_free`, below) do not hold the request alone: a small
//    request's leaves open by those, and its statement reads no GPU (`32xH100 per-host=4` as
//    before). `place` with other per-GPU bounds tests none (every member would be tested: that
//    statement is what it was). With $ready only the first window's hosts are read, the first in
//    the order the engine judges the leaves (the page's: fewest free, or most with
//    $fullest_leaves, then name, `windows` below): a probe stops at its first candidate, and the
//    engine reads a later window's hosts itself where the first holds none (the 248 probe's page of 16 leaves opened three, 99 host maps for the one it used).
//    `scanned` is the number of leaves read: fewer than $limit means the seek is exhausted.
//    A leaf with no window comes back without its members (the engine judges no such leaf,
//    _take_leaves): the 248 probe's pages returned 32 members for each of the 18 leaves it passed.
//    A member with no impaired GPU (Host.impaired_gpus 0, fragments/host_impaired) is ready
//    without reading its GPUs when the request's per-GPU bounds are the defaults ($filters.plain:
//    no memory, temperature or busy bound): it holds $host_min free GPUs by its counter, and with
//    none failed, degraded, MIG, of another model or without an up NIC via a PCIe switch, each
//    free GPU passes placement_usable (the 248 probe tested ~190 hosts' GPUs a statement, ~2 ms a
//    leaf of 32 hosts). This only adds ready hosts (`clean_free` plus those tested), so the gate
//    stays a sound prefilter whatever the counter says: a stale 0 (a GPU degraded since) opens a
//    leaf Python then refuses (work, not an answer: the engine reads the next window itself), a
//    stale count above 0, or none (a graph before v9: coalesce to 1), tests each GPU as before.
//    Each leaf's members are collected once (the clean ones' counters as `clean_free`, the others
//    as `doubtful`), and only a leaf whose clean members fall short (`test`) unwinds its doubtful
//    ones to test their GPUs (the subquery): before, every member was a row of the GPU traversal,
//    tested or not (stop 67 traversed only tested members; with those conditions in the
//    traversal's WHERE FalkorDB expanded every member's GPUs and dropped them after, 4,096 GPU
//    rows for a page of 16 leaves at 8k GPUs). Rows unchanged; `32xH100 per-host=4 ib-hops<=1`'s page 5-12% cheaper.
// The cluster's largest free blocks are not read here: placement_cluster_blocks reads them
// beside the first page, at the same time (the store runs the two at once).
// No unit to read at all: no row.
// The model prefilter: a unit whose model the engine knows ($known) passes when it is one of
// $prefilter_models (decided in Python: list membership, not a lower-case substring test per
// unit); any other model by the substring test (graphsvc.placement.engine.prefilter_params).
// Traversals from bound nodes name no label at an end the schema allows one label at (a label test
// per row on FalkorDB; docs/store.md, "No label test the schema already makes").
// @read
// @param even bool
// @param exclude list<string>
// @param extra int
// @param filters map
// @param fullest_first bool
// @param fullest_leaves bool
// @param gpus int
// @param host_min int
// @param known list<string>
// @param limit int
// @param min_free int
// @param model string
// @param need int
// @param now float
// @param per_host int
// @param prefilter_models list<string>
// @param ready bool
// @param skip int
// @param stale_before float
// @param virtual_free list<string>
// @row scanned int, found list<map>, hosts list<map>
//@include placement_leaf_page
WITH collect(s) AS units
WHERE size(units) > 0
CALL (units) {
  UNWIND units AS s
  OPTIONAL MATCH (s)<-[:UPLINK]-()<-[:HAS_NIC]-(h)
  WHERE h.free_gpus >= $host_min AND NOT h.name IN $exclude AND coalesce(h.received_at, $now) >= $stale_before
    AND ($model = '' OR h.gpu_model IN $prefilter_models
         OR (NOT coalesce(h.gpu_model, '') IN $known AND toLower(coalesce(h.gpu_model, '')) CONTAINS $model))
  WITH DISTINCT s, h
  WITH s, h, $filters.plain AND coalesce(h.impaired_gpus, 1) = 0 AS clean
  ORDER BY s.name, CASE WHEN $fullest_first THEN -h.free_gpus ELSE h.free_gpus END, h.name
  WITH s, collect(CASE WHEN h IS NULL THEN null ELSE [h.name, h.free_gpus] END) AS members,
       collect(CASE WHEN clean THEN h.free_gpus END) AS clean_free, collect(CASE WHEN NOT clean THEN h END) AS doubtful
  WITH s, members, clean_free, doubtful,
       CASE WHEN $per_host > 0 THEN null
            ELSE reduce(st = [0, 0], m IN members | CASE WHEN st[0] >= $gpus THEN st ELSE [st[0] + m[1], st[1] + 1] END)
       END AS cover,
       reduce(most = 0, m IN members | CASE WHEN m[1] > most THEN m[1] ELSE most END) AS top
  WITH s, members, clean_free, doubtful, cover, top,
       ($ready OR $filters.plain) AND NOT
         CASE WHEN $per_host > 0 THEN size(clean_free) >= $need
              WHEN $even THEN any(d IN range(1, top) WHERE $gpus % d = 0
                                  AND d * size([f IN clean_free WHERE f >= d]) >= $gpus)
              ELSE reduce(t = 0, f IN clean_free | t + f) >= $gpus
         END AS test
  CALL (doubtful, test) {
    UNWIND CASE WHEN test THEN doubtful ELSE [] END AS tested
    OPTIONAL MATCH (tested)-[:HAS_GPU]->(g)
    WHERE g.state = 'free' OR g.uuid IN $virtual_free OR (g.state = 'reserved' AND g.lease_expires_at < $now)
    OPTIONAL MATCH (g)-[a:NIC_AFFINITY]->(n)
    WITH tested, g, a, n,
//@include placement_usable
    WITH tested, sum(CASE WHEN usable THEN 1 ELSE 0 END) AS usable_gpus
    RETURN collect(usable_gpus) AS tested_usable
  }
  WITH s, members, cover, top, CASE WHEN test THEN clean_free + tested_usable END AS usable
  WITH s, members,
       CASE WHEN $per_host > 0 AND size(members) < $need THEN 0
            WHEN $per_host > 0 AND usable IS NOT NULL AND size([u IN usable WHERE u >= $host_min]) < $need THEN 0
            WHEN $per_host > 0 THEN $need + $extra
            WHEN cover[0] < $gpus THEN 0
            WHEN $even AND NOT any(d IN range(1, top) WHERE $gpus % d = 0
                                   AND d * size([m IN members WHERE m[1] >= d]) >= $gpus) THEN 0
            WHEN usable IS NULL THEN cover[1] + $extra
            WHEN $even AND NOT any(d IN range(1, top) WHERE $gpus % d = 0
                                   AND d * size([u IN usable WHERE u >= d]) >= $gpus) THEN 0
            WHEN NOT $even AND reduce(t = 0, u IN usable | t + u) < $gpus THEN 0
            ELSE cover[1] + $extra
       END AS window
  RETURN count(s) AS scanned,
         collect({unit: s.name, free: s.free_gpus, members: CASE WHEN window > 0 THEN members ELSE [] END,
                  window: window}) AS found,
         collect([CASE WHEN $fullest_leaves THEN -s.free_gpus ELSE s.free_gpus END, s.name,
                  [m IN members[0..window] | m[0]]]) AS windows
}
WITH scanned, found, windows,
     reduce(opened = null, w IN windows |
       CASE WHEN size(w[2]) > 0 AND (opened IS NULL OR w[0] < opened[0] OR (w[0] = opened[0] AND w[1] < opened[1]))
            THEN w ELSE opened END) AS opened
WITH [scanned, found] AS keep, [] AS host_blocks, [] AS domain_blocks,
     CASE WHEN $ready THEN coalesce(opened[2], [])
          ELSE reduce(acc = [], w IN windows | acc + w[2]) END AS names
//@include placement_host_maps
RETURN keep[0] AS scanned, keep[1] AS found, hosts
