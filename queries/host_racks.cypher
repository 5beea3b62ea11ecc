// The racks a host hangs under (exactly one when the graph is consistent).
// @read
// @param name string
// @row racks list<string>
MATCH (r:Rack)-[:HAS_HOST]->(:Host {name: $name})
RETURN collect(r.name) AS racks
