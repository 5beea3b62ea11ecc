// Tells a fresh graph from one written before versioning existed.
// @read
// @row has_nodes bool
OPTIONAL MATCH (n)
WITH n
LIMIT 1
RETURN n IS NOT NULL AS has_nodes
