// The GPU models the graph holds, for the answer to a request naming a model none matches.
MATCH (g:GPU)
RETURN DISTINCT g.model AS model
ORDER BY model
