// Graph v5 -> v6 (1/2): tie buckets are numbered 1-16, never 0 (graphsvc.store.schema.tie_bucket
// says why: FalkorDB, loading a graph from its RDB, leaves 0-valued entries out of its range
// indexes, so a seek for bucket 0 found nothing after every restart). A domain in bucket 0 moves
// to bucket 16; the others keep theirs until their host's next full ingest writes the new hashed
// bucket (the bucket is part of the document's fingerprint, so every host's next document is
// ingested whole). `coalesce` keeps the planner off the index: on a graph just loaded, an index
// seek for 0 would find none of the domains this must move. Idempotent.
// @write
// @row domains int
MATCH (d:NVLinkDomain)
WHERE coalesce(d.tie_bucket, -1) = 0
SET d.tie_bucket = 16
RETURN count(d) AS domains
