// Applies a host's fast-changing GPU readings (temperature, load, health), keyed by uuid, and
// the counters they move (fragments/apply_readings). Writes nothing when facts or metrics newer
// than $collected_at are already stored; uuids the host does not have are ignored (the next full
// facts will tell). $props is what the host records of them: {metrics_at: $collected_at,
// received_at}.
// Locks first (Neo4j read committed), as ingest_host does: every GPU of the host (uuid order), then
// the host, and only then reads the freshness it decides on, through a variable bound after the
// locks (Neo4j serves a property read before a lock from its cache: docs/store.md). Checked before
// the locks too, so a stale document takes none. (It checked only before them: an older document
// that waited for an ingest of newer facts wrote its readings over them, as a helper's trial showed.)
// @write
// @param collected_at float
// @param host string
// @param props map
// @param readings map
// @row host string, updated list<string>
MATCH (h:Host {name: $host})
WITH h, coalesce(h.metrics_at, 0.0) AS metrics_at, coalesce(h.collected_at, 0.0) AS collected_at
WITH h, CASE WHEN metrics_at > collected_at THEN metrics_at ELSE collected_at END AS newest
WHERE newest <= $collected_at
//@include lock_host_gpus
WITH reported, host, coalesce(host.metrics_at, 0.0) AS metrics_at, coalesce(host.collected_at, 0.0) AS collected_at
WHERE CASE WHEN metrics_at > collected_at THEN metrics_at ELSE collected_at END <= $collected_at
//@include apply_readings
RETURN carry.host AS host, carry.updated AS updated
