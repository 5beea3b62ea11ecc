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
// Cost on FalkorDB (docs/store.md, "What a FalkorDB statement pays for"): a map's property read
// copies the whole value, so `doc.readings[x.uuid]` copied every GPU's readings to read one; the
// readings are bound once per document (`readings`) and indexed from there. The host's GPUs are
// collected in a subquery, so no document map is a grouping key. The lock prelude is one lock
// block (FalkorDB, writing one statement at a time, skips it). A batch of eight documents: 2.9 ->
// 1.6 ms in the store (docs/benchmarks.md, "Stop 51" under Host fact ingest).
// A document that moves a GPU's health into or out of failed or degraded (`impair`, decided
// before the SET) recounts its host's impaired_gpus after it (fragments/host_impaired, under the
// host's lock taken above); the others read no more.
// @write
// @param docs list<map>
// @row host string
//@lock-begin
UNWIND $docs AS doc
MATCH (:Host {name: doc.host})-[:HAS_GPU]->(g:GPU)
WITH g
ORDER BY g.uuid
WITH collect(g) AS locked
FOREACH (x IN locked | SET x:GPU)
WITH count(locked) AS one
UNWIND $docs AS doc
MATCH (lock_host:Host {name: doc.host})
WITH lock_host
ORDER BY lock_host.name
WITH collect(lock_host) AS lock_hosts
FOREACH (x IN lock_hosts | SET x:Host)
WITH 1 AS one
//@lock-end
UNWIND $docs AS doc
MATCH (h:Host {name: doc.host})
WITH doc, h, coalesce(h.facts_fingerprint, '') AS stored_fingerprint, coalesce(h.collected_at, 0.0) AS stored_at,
     coalesce(h.metrics_at, 0.0) AS metrics_at
WHERE stored_fingerprint = doc.fingerprint AND stored_at <= doc.props.collected_at AND metrics_at <= doc.props.collected_at
CALL (h) {
  OPTIONAL MATCH (h)-[:HAS_GPU]->(g:GPU)
  RETURN collect(g) AS host_gpus
}
WITH doc.props AS props, doc.readings AS readings, h, host_gpus
WITH props, readings, h, [x IN host_gpus WHERE readings[x.uuid] IS NOT NULL] AS gpus
WHERE all(x IN gpus WHERE (coalesce(x.health, 'ok') = 'failed') = (coalesce(readings[x.uuid].health, x.health, 'ok') = 'failed'))
WITH props, readings, h, gpus,
     any(x IN gpus WHERE (toLower(coalesce(x.health, 'ok')) IN ['failed', 'degraded'])
                         <> (toLower(coalesce(readings[x.uuid].health, x.health, 'ok')) IN ['failed', 'degraded'])) AS impair
SET h += props
FOREACH (x IN gpus | SET x += readings[x.uuid])
WITH h, impair
CALL (h, impair) {
  WITH h WHERE impair
//@include host_impaired
}
RETURN h.name AS host
