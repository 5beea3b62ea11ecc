// Test only: a GPU's health written behind every counter's back (no recount of free_gpus or
// impaired_gpus), the way a stale counter would leave the graph.
// @write
// @param health string
// @param uuid string
// @row uuid string
MATCH (g:GPU {uuid: $uuid})
SET g.health = $health
RETURN g.uuid AS uuid
