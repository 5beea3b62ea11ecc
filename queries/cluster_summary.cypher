// GPUs by model, state and health, for the cluster overview.
// @read
// @row model string, state string, health string?, gpus int
MATCH (g:GPU)
RETURN g.model AS model, g.state AS state, coalesce(g.health, 'unknown') AS health, count(g) AS gpus
ORDER BY model, state, health
