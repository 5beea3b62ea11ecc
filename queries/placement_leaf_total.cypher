// How many leaves placement_leaves_fit could page through for $min_free (fragment
// placement_leaf_page without its order and page): a probe (PlacementEngine.fits) pages them
// fullest first, where its first candidate is likeliest, only when its search budget reads them
// all, so that it finds one exactly where `place`, paging them fewest first, would. At 8k GPUs
// the probe of `248xH100 per-host=8 rail-aligned` paged 19 leaves fewest first in six statements
// (~20 ms of a ~50 ms diagnosis) to find the fullest, which holds it (docs/benchmarks.md).
// @read
// @param min_free int
// @row leaves int
MATCH (s:Switch)
WHERE s.tier = 'leaf' AND s.free_gpus >= $min_free AND (coalesce(s.rail, 0) = 0 OR s.home_leaf = true)
RETURN count(s) AS leaves
