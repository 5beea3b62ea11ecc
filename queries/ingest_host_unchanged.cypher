// Applies a host document whose topology is unchanged since its last full ingest ($fingerprint
// equals the stored facts_fingerprint: same nodes, edges and properties but for the timestamps
// and the GPUs' health and load): the host's properties and its GPUs' health and load, in one
// small statement instead of rewriting the host (#15). Locks as update_gpu_metrics does: every GPU
// of the host (uuid order), then the host, then decides on the stored fingerprint and freshness
// read after the locks (and, to take no lock for a stale document, before them too). A health
// change into or out of `failed` moves the free-GPU counters as update_gpu_metrics does (the flips
// decided on the locked GPUs, then their counters locked; newly failed free GPUs leave the
// counters before the SET, recovered ones join after it). Returns no row, and writes nothing, when the fingerprint
// differs, the host is unknown or newer facts or metrics are stored: the caller then sends the document
// through ingest_host, which decides (and explains a refusal).
// A health change into or out of failed or degraded (`impair`, decided on the locked GPUs before
// the SET) recounts the host's impaired_gpus after it (fragments/host_impaired); none reads no more.
// @write
// @param fingerprint string
// @param gpus map
// @param host string
// @param props map
// @row host string
MATCH (h:Host {name: $host})
WITH h, coalesce(h.facts_fingerprint, '') AS stored_fingerprint, coalesce(h.collected_at, 0.0) AS stored_at,
     coalesce(h.metrics_at, 0.0) AS metrics_at
WHERE stored_fingerprint = $fingerprint AND stored_at <= $props.collected_at AND metrics_at <= $props.collected_at
//@include lock_host_gpus
WITH reported, host
WHERE coalesce(host.facts_fingerprint, '') = $fingerprint AND coalesce(host.collected_at, 0.0) <= $props.collected_at
  AND coalesce(host.metrics_at, 0.0) <= $props.collected_at
WITH {host: host,
      impair: any(x IN reported WHERE x.uuid IN keys($gpus) AND $gpus[x.uuid].health IS NOT NULL
        AND (toLower(coalesce(x.health, 'ok')) IN ['failed', 'degraded']) <> (toLower($gpus[x.uuid].health) IN ['failed', 'degraded']))} AS keep,
     [x IN reported WHERE x.uuid IN keys($gpus) AND $gpus[x.uuid].health IS NOT NULL
        AND (coalesce(x.health, 'ok') = 'failed') <> ($gpus[x.uuid].health = 'failed')] AS gpus
//@include lock_counters
WITH keep.host.name AS host_name, keep.impair AS impair,
     [x IN gpus WHERE x.state = 'free' AND coalesce(x.health, 'ok') <> 'failed' AND $gpus[x.uuid].health = 'failed'] AS down,
     [x IN gpus WHERE x.state = 'free' AND coalesce(x.health, 'ok') = 'failed' AND $gpus[x.uuid].health <> 'failed'] AS up
WITH {host: host_name, up: [x IN up | x.uuid], impair: impair} AS carry, down AS moved, -1 AS sign
//@include delta_tail
MATCH (h:Host {name: carry.host})
SET h += $props
WITH h, carry.up AS up, carry.impair AS impair
OPTIONAL MATCH (h)-[:HAS_GPU]->(g:GPU)
WHERE g.uuid IN keys($gpus)
SET g += $gpus[g.uuid]
WITH h, up, impair, collect(g) AS touched
CALL (h, impair) {
  WITH h WHERE impair
//@include host_impaired
}
WITH h, up, touched
WITH h.name AS carry, [x IN touched WHERE x.uuid IN up] AS moved, 1 AS sign
//@include delta_tail
RETURN carry AS host
