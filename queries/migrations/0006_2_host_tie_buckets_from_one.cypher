// Graph v5 -> v6 (2/2): hosts' tie buckets numbered 1-16 too (0006_1_domain_tie_buckets_from_one
// says why): a host in bucket 0 moves to bucket 16. Idempotent.
// @write
// @row hosts int
MATCH (h:Host)
WHERE coalesce(h.tie_bucket, -1) = 0
SET h.tie_bucket = 16
RETURN count(h) AS hosts
