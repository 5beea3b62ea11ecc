// Candidate leaf switches for multi-host jobs in best-fit order (fewest free GPUs that are
// enough first), one per rail group: on a rail-optimised fabric every rail leaf of a
// scalable unit has the same hosts. A range seek on the free_gpus index; leaves are few.
// @read
// @param limit int
// @param min_free int
// @param skip int
// @row leaf string?, free int
MATCH (s:Switch)
WHERE s.tier = 'leaf' AND s.free_gpus >= $min_free AND coalesce(s.rail, 0) = 0
RETURN s.name AS leaf, s.free_gpus AS free
ORDER BY free, leaf
SKIP $skip
LIMIT $limit
