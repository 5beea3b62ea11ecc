// Fragment (not a query): placement_domains_fit's page of candidate NVLink domains, by their
// indexed free counter: exactly $first_size free first, then the next size towards $last_size
// ($step -1: largest first), ties by (tie_bucket, uuid), $limit after $skip, of the model (the
// prefilter). Three lazy passes (placement_domains_fit says why; the first counts any domain
// with a bucket, the later ones reach buckets 1 to $tie_buckets, all the store writes). Out: rows of `d` (and its
// `tie_key`), in that order. Its twin placement_domain_page_scan reads the same page by a scan
// (the statement's `_scan` form, on small clusters).
UNWIND range($first_size, $last_size, $step) AS want
MATCH (d:NVLinkDomain)
WHERE d.free_gpus = want AND d.tie_bucket IS NOT NULL AND ($model = '' OR d.gpu_model IN $prefilter_models
       OR (NOT coalesce(d.gpu_model, '') IN $known AND toLower(coalesce(d.gpu_model, '')) CONTAINS $model))
WITH want
LIMIT $probe
WITH collect(DISTINCT want) AS wants
UNWIND wants AS want
UNWIND range(1, $tie_buckets) AS bucket
MATCH (d:NVLinkDomain)
WHERE d.free_gpus = want AND d.tie_bucket = bucket AND ($model = '' OR d.gpu_model IN $prefilter_models
       OR (NOT coalesce(d.gpu_model, '') IN $known AND toLower(coalesce(d.gpu_model, '')) CONTAINS $model))
WITH wants, abs(want - $first_size) * $tie_buckets + bucket AS tie_key
LIMIT $probe
WITH wants, max(tie_key) AS last_key
UNWIND wants AS want
UNWIND range(1, $tie_buckets) AS bucket
WITH want, bucket, abs(want - $first_size) * $tie_buckets + bucket AS tie_key, last_key
WHERE tie_key <= last_key
MATCH (d:NVLinkDomain)
WHERE d.free_gpus = want AND d.tie_bucket = bucket AND ($model = '' OR d.gpu_model IN $prefilter_models
       OR (NOT coalesce(d.gpu_model, '') IN $known AND toLower(coalesce(d.gpu_model, '')) CONTAINS $model))
WITH d, tie_key
ORDER BY tie_key, d.uuid
SKIP $skip
LIMIT $limit
