// Graph v4 -> v5 (1/2): NVLink domains gained `tie_bucket`, a static spread that placement breaks ties
// in free count by before the uuid (placement_domains_fit: a page seeks one bucket of the tied
// domains, not all of them). Ingest sets it from a hash of the uuid (graphsvc.store.schema.
// tie_bucket); Cypher has no such hash on both stores, so a domain written before v5 gets a
// random bucket here (0-15, TIE_BUCKETS), static from then on, and the hashed one at its host's
// next full ingest (the bucket is part of the document's fingerprint). A domain without a bucket
// would be invisible to placement. Idempotent.
// @write
// @row domains int
MATCH (d:NVLinkDomain)
WHERE d.tie_bucket IS NULL
SET d.tie_bucket = toInteger(floor(rand() * 16))
RETURN count(d) AS domains
