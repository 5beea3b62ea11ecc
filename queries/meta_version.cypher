// The graph version the migration runner last recorded (no row before the first run).
// @read
// @row version int
MATCH (m:GraphMeta {key: 'graph'})
RETURN m.version AS version
