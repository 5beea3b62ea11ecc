// Every site with the clusters it owns, by name.
// @read
// @row name any, kind any, provider any, region any, location any, parent any, capacity_kinds any
// @row spot_preemption_per_h any, clusters any
MATCH (s:Site)
OPTIONAL MATCH (s)-[:HAS_CLUSTER]->(c:Cluster)
WITH s, c
ORDER BY c.name
WITH s, collect(c.name) AS clusters
RETURN s.name AS name, s.kind AS kind, s.provider AS provider, s.region AS region, s.location AS location,
       s.parent AS parent, s.capacity_kinds AS capacity_kinds, s.spot_preemption_per_h AS spot_preemption_per_h,
       clusters
ORDER BY name
