// Every node with its labels and properties, for offline checkers and debugging.
MATCH (n)
RETURN labels(n) AS labels, properties(n) AS props
LIMIT $limit
