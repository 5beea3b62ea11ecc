// The links between sites (stored once per pair; callers read them undirected).
// @read
// @row a any, b any, bandwidth_gbps any, latency_ms any
MATCH (a:Site)-[r:SITE_LINK]->(b:Site)
RETURN a.name AS a, b.name AS b, r.bandwidth_gbps AS bandwidth_gbps, r.latency_ms AS latency_ms
ORDER BY a, b
