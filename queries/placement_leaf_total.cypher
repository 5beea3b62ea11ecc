// How many leaves placement_leaves_fit could page through for $min_free (its page fragment,
// placement_leaf_page, from the first leaf, at most $limit of them): a probe
// (PlacementEngine.fits) pages them fullest first, where its first candidate is likeliest, only
// when its search budget reads them all ($limit is one more than the budget has left), so that
// it finds one exactly where `place`, paging them fewest first, would. At 8k GPUs the probe of
// `248xH100 per-host=8 rail-aligned` paged 19 leaves fewest first in six statements (~20 ms of a
// ~50 ms diagnosis) to find the fullest, which holds it (docs/benchmarks.md, "Stop 68").
// @read
// @param fullest_leaves bool
// @param limit int
// @param min_free int
// @param skip int
// @row leaves int
//@include placement_leaf_page
RETURN count(s) AS leaves
