// Operator repair: forget when a host's facts and metrics were collected, so its next update
// is applied whatever its collected_at (a collector with a bad clock once sent a future one,
// and every correct update since looked older). Returns the forgotten times; no row: no host.
// @write
// @param host string
// @row host string, previous_collected_at float?, previous_metrics_at float?
MATCH (h:Host {name: $host})
WITH h, h.collected_at AS previous_collected_at, h.metrics_at AS previous_metrics_at
SET h.collected_at = 0.0, h.metrics_at = 0.0
RETURN h.name AS host, previous_collected_at, previous_metrics_at
