// Test only: a host whose free counter is missing (a graph from before the counters, or one an
// operator edited), which no form of a reserve may read as a candidate.
// @write
// @param name string
// @row name string
MATCH (h:Host {name: $name})
REMOVE h.free_gpus
RETURN h.name AS name
