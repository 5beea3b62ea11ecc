// Test only: every node with its labels, its key (schema/graph.toml gives every label one of
// uuid, name, id or key) and its properties: one half of the graph snapshots that
// tests/integration/test_first_ingest_fresh_graph.py compares.
// @read
// @row labels list<string>, key string, props map
MATCH (n)
RETURN labels(n) AS labels, coalesce(n.uuid, n.name, n.id, n.key) AS key, properties(n) AS props
