// Graph v3 -> v4: MIG slices (MigSlice, HAS_SLICE, HOLDS_SLICE) join the model. Graphs before
// v4 hold none, so this only gives any slice without a state the default a new one gets.
// @write
// @row slices int
OPTIONAL MATCH (s:MigSlice)
WHERE s.state IS NULL
SET s.state = 'free'
RETURN count(s) AS slices
