// How many hosts the graph has: which form of the one-host reserve statements the service runs
// (fastpath.candidate_read) and of placement's candidate statements (PlacementEngine.fit_form);
// read with the GPU models, once a minute (graphsvc.placement.graph_facts).
// @read
// @row hosts int
MATCH (h:Host)
RETURN count(h) AS hosts
