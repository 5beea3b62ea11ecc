// Records the graph version after a migration step.
// @write
// @param now float
// @param version int
// @row version int
MERGE (m:GraphMeta {key: 'graph'})
SET m.version = $version, m.migrated_at = $now
RETURN m.version AS version
