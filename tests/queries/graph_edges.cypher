// Test only: every relationship with its type, its properties and its ends by labels and key (as
// graph_nodes names them): the other half of the graph snapshots that
// tests/integration/test_first_ingest_fresh_graph.py compares.
// @read
// @row type string, from_labels list<string>, from_key string, to_labels list<string>, to_key string, props map
MATCH (a)-[e]->(z)
RETURN type(e) AS type, labels(a) AS from_labels, coalesce(a.uuid, a.name, a.id, a.key) AS from_key,
       labels(z) AS to_labels, coalesce(z.uuid, z.name, z.id, z.key) AS to_key, properties(e) AS props
