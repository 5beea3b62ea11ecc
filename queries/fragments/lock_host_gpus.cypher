// Fragment (not a query): included with `//@include lock_host_gpus` by a write of one host's
// facts or readings (update_gpu_metrics, ingest_host_unchanged) once its cheap freshness check
// before any lock has passed. It write-locks every GPU of the host in uuid order (the global lock
// order, as ingest_host), then the host, and binds the host again through a list: the statement
// decides on the freshness it reads after the locks, and Neo4j would serve `h`'s properties read
// before them from its cache (docs/store.md, "After a lock, read through a new variable"). In: `h`
// (the host, one row). Out: `WITH reported, host`: the host's GPUs (locked) and the host.
OPTIONAL MATCH (h)-[:HAS_GPU]->(c:GPU)
WITH h, c
ORDER BY c.uuid
WITH h, collect(c) AS reported
FOREACH (x IN reported | SET x:GPU) //@lock
SET h:Host //@lock
WITH reported, collect(h) AS hosts
UNWIND hosts AS host
