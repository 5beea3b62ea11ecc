// The GPU models the graph holds, for the answer to a request naming a model none matches.
// @read
// @row model string
MATCH (g:GPU)
RETURN DISTINCT g.model AS model
ORDER BY model
