// Host and GPU counts (per model) for /healthz and the demo's progress line.
// @read
// @row hosts int, models list<map>
MATCH (h:Host)
WITH count(h) AS hosts
OPTIONAL MATCH (g:GPU)
WITH hosts, g.model AS model, count(g) AS gpus
RETURN hosts, collect({model: model, gpus: gpus}) AS models
