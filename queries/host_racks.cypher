// The racks a host hangs under (exactly one when the graph is consistent).
MATCH (r:Rack)-[:HAS_HOST]->(:Host {name: $name})
RETURN collect(r.name) AS racks
