// Candidate hosts in best-fit order: hosts with exactly $first_size free GPUs first, then
// the next size towards $last_size, ... Each step is an index seek on Host.free_gpus; ties are
// broken by name (ORDER BY), so the $limit hosts never depend on the plan's row order. A first
// streaming pass stops after $limit hosts; the farthest count it saw bounds the sorted pass (any
// row order gives a bound at least the true one; none seen: an empty range), which sorts only the
// hosts whose counts lie within it, not every host with a free GPU (all of them, though, when
// most hosts share the bound's count). Under Neo4j's read committed isolation a count may change
// between the passes: the page may then come back short, never wrong; and one that changes
// between two seeks is seen under two counts, so each host of the page is one row (its count
// nearest $first_size), never two (grouped after the LIMIT: the page may then come back short).
// @read
// @param exclude list<string>
// @param first_size int
// @param last_size int
// @param limit int
// @param model string
// @param step int
// @row host string, free int
UNWIND range($first_size, $last_size, $step) AS want
MATCH (h:Host)
WHERE h.free_gpus = want AND NOT h.name IN $exclude AND toLower(coalesce(h.gpu_model, '')) CONTAINS $model
WITH want
LIMIT $limit
WITH max(want) AS most, min(want) AS least
UNWIND range($first_size, coalesce(CASE WHEN $step > 0 THEN most ELSE least END, $first_size - $step), $step) AS want
MATCH (h:Host)
WHERE h.free_gpus = want AND NOT h.name IN $exclude AND toLower(coalesce(h.gpu_model, '')) CONTAINS $model
WITH h, want
ORDER BY abs(want - $first_size), h.name
LIMIT $limit
WITH h, min(abs(want - $first_size)) AS gap
RETURN h.name AS host, $first_size + sign($step) * gap AS free
ORDER BY gap, host
