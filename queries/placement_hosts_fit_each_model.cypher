// The first page of placement_hosts_fit for every model in $each at once, on a cluster of at most
// `engine.SCAN_BLOCKS_UP_TO` hosts: what a request naming no model on a cluster of several
// models reads for its per-model searches (engine `search_each_model`), one statement where it
// ran one per model (the demo cluster's replay: 10 -> 7 statements a decision; docs/benchmarks.md,
// "Stop 44").
// 1. Every host with $first_size..$last_size free GPUs (either way round), neither excluded nor
//    stale, read by a scan (placement_hosts_fit_scan's host page seeks per free count; here one
//    pass serves every model), under each model of $each its model prefilter passes (the
//    prefilter of placement_hosts_fit: `prefilter_models` per model, the substring test `model`
//    for a model the engine does not know), in best-fit order (free counts nearest $first_size
//    first, ties by name): each model's first $limit hosts, its page.
// 2. In each page's hosts, the free GPUs that meet the per-GPU constraints (fragment
//    placement_usable) are counted per NVLink domain, as placement_hosts_fit does, but of any
//    model ($model is ''): a host holding GPUs of several models may qualify here where the
//    model's own statement would not count them. That adds no candidate: Python chooses each
//    model's GPUs by `select.eligible`, which the model's own count bounds, so a host this count
//    adds holds no choice of the model's GPUs. Every other host counts alike. (The bound holds
//    where the model's prefilter is a substring of every name `eligible` accepts for it, as the
//    model table's families and names are; an unknown name with a vendor word inside it, such as
//    'Acme amd X1' for 'Acme X1', is not, and there this count offers a host of both names that
//    the model's own statement misses: a candidate `eligible` accepts.)
// 3. The cluster's largest free blocks once (placement_free_blocks_scan) and the free GPUs of
//    every page's qualifying hosts once (placement_host_maps).
// Out: one row, `pages` (per model with a page: model, `scanned` (its page's hosts) and
// `found` as placement_hosts_fit's), `hosts`, `host_blocks`, `domain_blocks`. A model without a
// page has no entry (its statement would have found no unit).
// @read
// @param blocks int
// @param each list<map>
// @param exclude list<string>
// @param filters map
// @param first_size int
// @param known list<string>
// @param last_size int
// @param limit int
// @param mode string
// @param model string
// @param n int
// @param now float
// @param stale_before float
// @param tie_buckets int
// @param virtual_free list<string>
// @row pages list<map>, hosts list<map>, host_blocks list<map>, domain_blocks list<map>
MATCH (h:Host)
WHERE coalesce(h.free_gpus, -1) >= CASE WHEN $first_size < $last_size THEN $first_size ELSE $last_size END
  AND coalesce(h.free_gpus, -1) <= CASE WHEN $first_size < $last_size THEN $last_size ELSE $first_size END
  AND NOT h.name IN $exclude AND coalesce(h.received_at, $now) >= $stale_before
UNWIND [e IN $each WHERE h.gpu_model IN e.prefilter_models
          OR (NOT coalesce(h.gpu_model, '') IN $known AND toLower(coalesce(h.gpu_model, '')) CONTAINS e.model)
        | e.model] AS page_model
WITH page_model, h
ORDER BY page_model, abs(h.free_gpus - $first_size), h.name
WITH page_model, collect(h)[0..$limit] AS units
//@include placement_host_counts
WITH collect({model: page_model, scanned: scanned, found: found}) AS pages
//@include placement_free_blocks_scan
WITH host_blocks, domain_blocks, pages AS keep,
     reduce(acc = [], p IN pages | acc + [x IN p.found | x.unit]) AS names
//@include placement_host_maps
RETURN keep AS pages, hosts, host_blocks, domain_blocks
