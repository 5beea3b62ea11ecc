// Every relationship with the keys of its ends, for offline checkers and debugging.
MATCH (a)-[r]->(b)
RETURN type(r) AS type, labels(a) AS from_labels, coalesce(a.uuid, a.name, a.key) AS from_key,
       labels(b) AS to_labels, coalesce(b.uuid, b.name, b.key) AS to_key, properties(r) AS props
ORDER BY type, from_key, to_key
LIMIT $limit
