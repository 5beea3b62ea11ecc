// Fragment (not a query): placement_domain_page for a cluster of at most
// `engine.SCAN_BLOCKS_UP_TO` hosts: the same page, read by a scan of every NVLink domain instead
// of index seeks per size and bucket, whose stale entries a scheduler's reservations grow (every
// reservation moves a domain's counter; placement_leaf_page_scan), and which on a small cluster
// walk many sizes that hold no domain. The domain statement's scan form with this page against
// the same form with the seek, on one store (docs/benchmarks.md, "Stop 43"): after 25 s of
// reservations 25% faster on one SU, 49% at 16 SUs half reserved and 19-20% on the demo cluster;
// quiet, 19-26% faster on clusters in use, 6% on one idle SU, 12% slower at 511 idle hosts
// (the seek's best case: every domain at one size). The host statement keeps its page's seek: its
// scan measured 19-24% slower at 511 hosts. Every domain with a free count in the sizes' span
// ($first_size to $last_size, either way) and a tie bucket the seek can reach (1 to
// $tie_buckets; the buckets the store writes, graphsvc.store.schema.tie_bucket) passes, and the
// page is the same sort by (size, bucket, uuid), skip and limit. (A bucket outside that span,
// which nothing writes, would count in the seek's first pass and not in its later ones, and the
// two forms would differ.) The predicates are the seek form's, each inside
// `coalesce(..., false)` (a null comparison filters the domain out either way), which keeps the
// planner off the indexes.
MATCH (d:NVLinkDomain)
WHERE coalesce(d.free_gpus >= CASE WHEN $step > 0 THEN $first_size ELSE $last_size END, false)
  AND coalesce(d.free_gpus <= CASE WHEN $step > 0 THEN $last_size ELSE $first_size END, false)
  AND coalesce(d.tie_bucket, -1) IN range(1, $tie_buckets)
  AND coalesce($model = '' OR d.gpu_model IN $prefilter_models
       OR (NOT coalesce(d.gpu_model, '') IN $known AND toLower(coalesce(d.gpu_model, '')) CONTAINS $model), false)
WITH d, abs(d.free_gpus - $first_size) * $tie_buckets + d.tie_bucket AS tie_key
ORDER BY tie_key, d.uuid
SKIP $skip
LIMIT $limit
