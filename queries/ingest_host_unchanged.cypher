// Applies a host document whose topology is unchanged since its last full ingest ($fingerprint
// equals the stored facts_fingerprint: same nodes, edges and properties but for the timestamps
// and the GPUs' health and load): the host's properties and its GPUs' health and load, in one
// small statement instead of rewriting the host (#15). Locks as update_gpu_metrics does: every GPU
// of the host (uuid order), then the host, then decides on the stored fingerprint and freshness
// read after the locks (and, to take no lock for a stale document, before them too). Its writes,
// and the counters they move, are update_gpu_metrics's (fragments/apply_readings). Returns no row,
// and writes nothing, when the fingerprint differs, the host is unknown or newer facts or metrics
// are stored: the caller then sends the document through ingest_host, which decides (and explains
// a refusal).
// @write
// @param fingerprint string
// @param host string
// @param props map
// @param readings map
// @row host string
MATCH (h:Host {name: $host})
WITH h, coalesce(h.facts_fingerprint, '') AS stored_fingerprint, coalesce(h.collected_at, 0.0) AS stored_at,
     coalesce(h.metrics_at, 0.0) AS metrics_at
WHERE stored_fingerprint = $fingerprint AND stored_at <= $props.collected_at AND metrics_at <= $props.collected_at
//@include lock_host_gpus
WITH reported, host
WHERE coalesce(host.facts_fingerprint, '') = $fingerprint AND coalesce(host.collected_at, 0.0) <= $props.collected_at
  AND coalesce(host.metrics_at, 0.0) <= $props.collected_at
//@include apply_readings
RETURN carry.host AS host
