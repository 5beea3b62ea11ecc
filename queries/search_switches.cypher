// Explorer search: switches whose name contains any search piece (the service ranks them).
MATCH (s:Switch)
WHERE any(p IN $pieces WHERE toLower(s.name) CONTAINS p)
RETURN s.name AS name, s.tier AS tier, s.scalable_unit AS scalable_unit, s.rail AS rail
ORDER BY name
LIMIT $first
