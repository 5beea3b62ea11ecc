// Applies a host's fast-changing GPU metrics (temperature, load, health), keyed by uuid.
// Writes nothing when facts or metrics newer than $collected_at are already stored;
// uuids the host does not have are ignored (the next full facts will tell).
// Locks first (Neo4j read committed), as ingest_host does: every GPU of the host (uuid order), then
// the host, and only then reads the freshness it decides on, through a variable bound after the
// locks (Neo4j serves a property read before a lock from its cache: docs/store.md). Checked before
// the locks too, so a stale document takes none. (It checked only before them: an older document
// that waited for an ingest of newer facts wrote its readings over them, as a helper's trial showed.)
// A failed GPU is never counted free, so a health change into or out of `failed` moves the
// free-GPU counters in this same statement: the flips are decided on the locked GPUs, the
// counters they feed are locked next (fragments/lock_counters), the newly failed free GPUs leave
// the counters before the SET and the recovered ones join after it (delta_tail counts only GPUs
// that are not failed). A health change into or out of failed or degraded (`impair`, decided on
// the locked GPUs before the SET) recounts the host's impaired_gpus after it (fragments/host_impaired).
// @write
// @param collected_at float
// @param host string
// @param metrics map
// @param received_at float
// @row host string, updated list<string>
MATCH (h:Host {name: $host})
WITH h, coalesce(h.metrics_at, 0.0) AS metrics_at, coalesce(h.collected_at, 0.0) AS collected_at
WITH h, CASE WHEN metrics_at > collected_at THEN metrics_at ELSE collected_at END AS newest
WHERE newest <= $collected_at
//@include lock_host_gpus
WITH reported, host, coalesce(host.metrics_at, 0.0) AS metrics_at, coalesce(host.collected_at, 0.0) AS collected_at
WHERE CASE WHEN metrics_at > collected_at THEN metrics_at ELSE collected_at END <= $collected_at
WITH {host: host,
      impair: any(x IN reported WHERE x.uuid IN keys($metrics) AND $metrics[x.uuid].health IS NOT NULL
        AND (toLower(coalesce(x.health, 'ok')) IN ['failed', 'degraded']) <> (toLower($metrics[x.uuid].health) IN ['failed', 'degraded']))} AS keep,
     [x IN reported WHERE x.uuid IN keys($metrics) AND $metrics[x.uuid].health IS NOT NULL
        AND (coalesce(x.health, 'ok') = 'failed') <> ($metrics[x.uuid].health = 'failed')] AS gpus
//@include lock_counters
WITH keep.host.name AS host_name, keep.impair AS impair,
     [x IN gpus WHERE x.state = 'free' AND coalesce(x.health, 'ok') <> 'failed' AND $metrics[x.uuid].health = 'failed'] AS down,
     [x IN gpus WHERE x.state = 'free' AND coalesce(x.health, 'ok') = 'failed' AND $metrics[x.uuid].health <> 'failed'] AS up
WITH {host: host_name, up: [x IN up | x.uuid], impair: impair} AS carry, down AS moved, -1 AS sign
//@include delta_tail
MATCH (h:Host {name: carry.host})
SET h.metrics_at = $collected_at, h.received_at = $received_at
WITH h, carry.up AS up, carry.impair AS impair
OPTIONAL MATCH (h)-[:HAS_GPU]->(g:GPU)
WHERE g.uuid IN keys($metrics)
SET g += $metrics[g.uuid]
WITH h, up, impair, collect(g) AS touched
CALL (h, impair) {
  WITH h WHERE impair
//@include host_impaired
}
WITH h, up, touched
WITH {host: h.name, updated: [x IN touched | x.uuid]} AS carry, [x IN touched WHERE x.uuid IN up] AS moved, 1 AS sign
//@include delta_tail
RETURN carry.host AS host, carry.updated AS updated
