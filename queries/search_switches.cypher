// Explorer search: switches whose name contains any search piece (the service ranks them).
// @read
// @param first int
// @param pieces list<string>
// @row name string, cluster string?, tier string, scalable_unit string?, rail int?
MATCH (s:Switch)
WHERE any(p IN $pieces WHERE toLower(s.name) CONTAINS p)
RETURN s.name AS name, s.cluster AS cluster, s.tier AS tier, s.scalable_unit AS scalable_unit, s.rail AS rail
ORDER BY name
LIMIT $first
