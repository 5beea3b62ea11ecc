// Records the graph version after a migration step.
MERGE (m:GraphMeta {key: 'graph'})
SET m.version = $version, m.migrated_at = $now
RETURN m.version AS version
