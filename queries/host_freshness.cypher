// When a host's facts and metrics were collected (explains an ignored metrics update).
// @read
// @param host string
// @row collected_at float?, metrics_at float?
MATCH (h:Host {name: $host})
RETURN h.collected_at AS collected_at, h.metrics_at AS metrics_at
