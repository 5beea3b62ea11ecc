// How many hosts the graph has: which of the two batch reserve statements the service runs
// (fastpath.batch_statement), read with the GPU models every few seconds.
// @read
// @row hosts int
MATCH (h:Host)
RETURN count(h) AS hosts
