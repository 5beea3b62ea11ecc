// Every relationship with the keys of its ends, for offline checkers and debugging.
// @read
// @param limit int
// @row type string, from_labels list<string>, from_key string, to_labels list<string>, to_key string
// @row props map
MATCH (a)-[r]->(b)
RETURN type(r) AS type, labels(a) AS from_labels, coalesce(a.uuid, a.name, a.key) AS from_key,
       labels(b) AS to_labels, coalesce(b.uuid, b.name, b.key) AS to_key, properties(r) AS props
ORDER BY type, from_key, to_key
LIMIT $limit
