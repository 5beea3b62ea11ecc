// Applies several host documents whose topology is unchanged (see ingest_host_unchanged) in one
// statement: the group commit of the steady state, where every collector resends the same
// topology with new timestamps, health and load (#15). One row per document applied. A document
// is applied only when its $docs entry's fingerprint equals the stored one, no newer facts or metrics are
// stored and it changes no GPU's failed-ness (those move counters: the caller sends them through
// ingest_host_unchanged, alone); the others write nothing and return no row. Locks every GPU of
// the documents' hosts first, in uuid order across the batch (the global lock order), then the
// hosts (by name; a host without GPUs has no other lock), then reads what it decides on, the
// hosts through a variable bound after the locks; it writes no counter, so it locks none. The
// caller puts each host in a batch at most once.
// @write
// @param docs list<map>
// @row host string
UNWIND $docs AS doc
MATCH (:Host {name: doc.host})-[:HAS_GPU]->(g:GPU)
WITH g
ORDER BY g.uuid
WITH collect(g) AS locked
FOREACH (x IN locked | SET x:GPU) //@lock
//@lock-begin
WITH count(locked) AS one
UNWIND $docs AS doc
MATCH (lock_host:Host {name: doc.host})
WITH lock_host
ORDER BY lock_host.name
WITH collect(lock_host) AS lock_hosts
FOREACH (x IN lock_hosts | SET x:Host)
//@lock-end
WITH 1 AS one
UNWIND $docs AS doc
MATCH (h:Host {name: doc.host})
WITH doc, h, coalesce(h.facts_fingerprint, '') AS stored_fingerprint, coalesce(h.collected_at, 0.0) AS stored_at,
     coalesce(h.metrics_at, 0.0) AS metrics_at
WHERE stored_fingerprint = doc.fingerprint AND stored_at <= doc.props.collected_at AND metrics_at <= doc.props.collected_at
OPTIONAL MATCH (h)-[:HAS_GPU]->(g:GPU)
WITH doc, h, [x IN collect(g) WHERE x.uuid IN keys(doc.gpus)] AS gpus
WHERE all(x IN gpus WHERE (coalesce(x.health, 'ok') = 'failed') = (coalesce(doc.gpus[x.uuid].health, x.health, 'ok') = 'failed'))
SET h += doc.props
FOREACH (x IN gpus | SET x += doc.gpus[x.uuid])
RETURN h.name AS host
