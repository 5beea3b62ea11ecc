// Fragment (not a query): included with `//@include apply_readings` by the writes of one host's
// GPU readings (update_gpu_metrics, ingest_host_unchanged), right after `lock_host_gpus` and
// their freshness check read after its locks. It writes the host's properties ($props) and each
// reported GPU's readings ($readings: uuid -> health, temperature, load; uuids the host does not
// have are ignored), and keeps every counter those readings move right in the same statement:
// - A failed GPU is never counted free, so a health change into or out of `failed` moves the
//   free-GPU counters: the flips are decided on the locked GPUs, the counters they feed are
//   locked next (fragments/lock_counters), the newly failed free GPUs leave the counters before
//   the SET and the recovered ones join after it (delta_tail counts only GPUs that are not failed).
// - A health change into or out of failed or degraded (`impair`, decided on the locked GPUs
//   before the SET) recounts the host's impaired_gpus after it (fragments/host_impaired); a
//   document that changes none reads no more.
// In: `reported` (the host's GPUs, locked), `host` (the host, locked), one row. Out: `WITH
// DISTINCT carry`, one row: {host: its name, updated: the uuids of its GPUs written}.
WITH {host: host,
      impair: any(x IN reported WHERE x.uuid IN keys($readings) AND $readings[x.uuid].health IS NOT NULL
        AND (toLower(coalesce(x.health, 'ok')) IN ['failed', 'degraded']) <> (toLower($readings[x.uuid].health) IN ['failed', 'degraded']))} AS keep,
     [x IN reported WHERE x.uuid IN keys($readings) AND $readings[x.uuid].health IS NOT NULL
        AND (coalesce(x.health, 'ok') = 'failed') <> ($readings[x.uuid].health = 'failed')] AS gpus
//@include lock_counters
WITH keep.host.name AS host_name, keep.impair AS impair,
     [x IN gpus WHERE x.state = 'free' AND coalesce(x.health, 'ok') <> 'failed' AND $readings[x.uuid].health = 'failed'] AS down,
     [x IN gpus WHERE x.state = 'free' AND coalesce(x.health, 'ok') = 'failed' AND $readings[x.uuid].health <> 'failed'] AS up
WITH {host: host_name, up: [x IN up | x.uuid], impair: impair} AS carry, down AS moved, -1 AS sign
//@include delta_tail
MATCH (h:Host {name: carry.host})
SET h += $props
WITH h, carry.up AS up, carry.impair AS impair
OPTIONAL MATCH (h)-[:HAS_GPU]->(g:GPU)
WHERE g.uuid IN keys($readings)
SET g += $readings[g.uuid]
WITH h, up, impair, collect(g) AS touched
CALL (h, impair) {
  WITH h WHERE impair
//@include host_impaired
}
WITH h, up, touched
WITH {host: h.name, updated: [x IN touched | x.uuid]} AS carry, [x IN touched WHERE x.uuid IN up] AS moved, 1 AS sign
//@include delta_tail
