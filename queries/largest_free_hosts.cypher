// The hosts with the most free GPUs, probing free counts down from $top:
// index seeks that stop after $limit rows instead of sorting every host.
UNWIND range($top, 1, -1) AS want
MATCH (h:Host)
WHERE h.free_gpus = want
RETURN h.name AS unit, want AS free
LIMIT $limit
