// Every node with its labels and properties, for offline checkers and debugging.
// @read
// @param limit int
// @row labels list<string>, props map
MATCH (n)
RETURN labels(n) AS labels, properties(n) AS props
ORDER BY labels[0], coalesce(props.uuid, props.name, props.id, props.key)
LIMIT $limit
