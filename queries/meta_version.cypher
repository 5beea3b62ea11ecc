// The graph version the migration runner last recorded (no row before the first run).
MATCH (m:GraphMeta {key: 'graph'})
RETURN m.version AS version
