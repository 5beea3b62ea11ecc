// Graph v4 -> v5 (2/2): hosts gained `tie_bucket` too: the largest free blocks
// (fragment placement_free_blocks) break ties in free count by it, as domain pages do (see
// 0005_1_domain_tie_buckets: a random bucket, 0-15, until the host's next full ingest sets the
// hashed one). Idempotent.
// @write
// @row hosts int
MATCH (h:Host)
WHERE h.tie_bucket IS NULL
SET h.tie_bucket = toInteger(floor(rand() * 16))
RETURN count(h) AS hosts
