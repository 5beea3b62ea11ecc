// The first page of placement_domains_fit for every model in $each at once, on a cluster of at
// most `engine.SCAN_BLOCKS_UP_TO` hosts: what a request for one NVLink domain naming no model on
// a cluster of several models reads for its per-model searches (engine `search_each_model`), one
// statement where it ran one per model. The same reasoning as placement_hosts_fit_each_model:
// 1. Every NVLink domain in the sizes' span with a tie bucket the seek can reach, read by a scan
//    (placement_domain_page_scan's predicates, without the model), under each model of $each
//    its model prefilter passes, in the page's order (free count nearest $first_size first, then
//    tie bucket, then uuid): each model's first $limit domains, its page.
// 2. In each page's domains, the free GPUs that meet the per-GPU constraints (fragment
//    placement_usable) on hosts neither excluded nor stale, of any model ($model is ''): a
//    domain of several models may count GPUs (and hosts) here its model's statement would not;
//    Python chooses each model's GPUs by `select.eligible`, which that statement's count
//    bounds (but for the prefilter's one gap, placement_hosts_fit_each_model), so such a domain
//    or host adds no choice. Every other domain counts alike.
// 3. The cluster's largest free blocks once (placement_free_blocks_scan) and the free GPUs of the
//    hosts of every page's qualifying domains once (placement_host_maps).
// Out: one row, `pages` (per model with a page: model, `scanned` and `found` as
// placement_domains_fit's), `hosts`, `host_blocks`, `domain_blocks`. A model without a page
// has no entry.
// @read
// @param blocks int
// @param each list<map>
// @param exclude list<string>
// @param filters map
// @param first_size int
// @param known list<string>
// @param last_size int
// @param limit int
// @param model string
// @param n int
// @param now float
// @param stale_before float
// @param step int
// @param tie_buckets int
// @param virtual_free list<string>
// @row pages list<map>, hosts list<map>, host_blocks list<map>, domain_blocks list<map>
MATCH (d:NVLinkDomain)
WHERE coalesce(d.free_gpus >= CASE WHEN $step > 0 THEN $first_size ELSE $last_size END, false)
  AND coalesce(d.free_gpus <= CASE WHEN $step > 0 THEN $last_size ELSE $first_size END, false)
  AND coalesce(d.tie_bucket, -1) IN range(1, $tie_buckets)
UNWIND [e IN $each WHERE d.gpu_model IN e.prefilter_models
          OR (NOT coalesce(d.gpu_model, '') IN $known AND toLower(coalesce(d.gpu_model, '')) CONTAINS e.model)
        | e.model] AS page_model
WITH page_model, d, abs(d.free_gpus - $first_size) * $tie_buckets + d.tie_bucket AS tie_key
ORDER BY page_model, tie_key, d.uuid
WITH page_model, collect(d)[0..$limit] AS units
//@include placement_domain_counts
WITH collect({model: page_model, scanned: scanned, found: found}) AS pages
//@include placement_free_blocks_scan
WITH host_blocks, domain_blocks, pages AS keep,
     reduce(acc = [], p IN pages | reduce(a = acc, x IN p.found | a + [m IN x.hosts WHERE NOT m IN a])) AS names
//@include placement_host_maps
RETURN keep AS pages, hosts, host_blocks, domain_blocks
