// How many hosts the graph has: which form of the one-host reserve statements the service runs
// (fastpath.candidate_read, read with the GPU models every few seconds) and of placement's
// candidate statements (PlacementEngine.fit_form, once a minute).
// @read
// @row hosts int
MATCH (h:Host)
RETURN count(h) AS hosts
