// Fragment (not a query): placement_leaves_fit's page of candidate leaves, by their indexed free
// counter (enough: $min_free; the fewest first, or the most with $fullest_leaves; ties by name),
// one per rail group (on a rail-optimised fabric every rail leaf of a scalable unit has the same
// hosts: rail-0 leaves, and those that are a host's first, Switch.home_leaf, for hosts with no
// rail-0 cable), $limit after $skip. Out: rows of `s`, in that order. Its twin
// placement_leaf_page_scan reads the same page by a scan (the statement's `_scan` form, on small
// clusters).
MATCH (s:Switch)
WHERE s.tier = 'leaf' AND s.free_gpus >= $min_free AND (coalesce(s.rail, 0) = 0 OR s.home_leaf = true)
WITH s
ORDER BY CASE WHEN $fullest_leaves THEN -s.free_gpus ELSE s.free_gpus END, s.name
SKIP $skip
LIMIT $limit
