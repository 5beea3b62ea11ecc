// Mean power the collectors measured on busy GPUs of the given models: what a GPU of that
// model draws under load here (an idle GPU's reading says nothing about a job's energy).
// @read
// @param min_utilization float
// @param models list<string>
// @row model any, watts any, gpus any
MATCH (g:GPU)
WHERE g.model IN $models AND g.power_w > 0 AND g.utilization_pct >= $min_utilization
RETURN g.model AS model, avg(g.power_w) AS watts, count(g) AS gpus
ORDER BY model
