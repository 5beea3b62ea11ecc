// The clusters, each with its hosts and its fabric's switches (the explorer's fabric view picks one;
// `fabric(cluster:)` reads one cluster's switches).
// @read
// @row name string, hosts int, switches int
MATCH (c:Cluster)
OPTIONAL MATCH (s:Switch)
WHERE s.cluster = c.name
WITH c, count(s) AS switches
OPTIONAL MATCH (h:Host)
WHERE h.cluster = c.name
RETURN c.name AS name, count(h) AS hosts, switches
ORDER BY name
