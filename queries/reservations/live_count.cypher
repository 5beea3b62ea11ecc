// Live reservations and the GPUs they hold, for /metrics.
// @read
// @param now float
// @row reservations int, gpus float
MATCH (r:Reservation)
WHERE r.state = 'active' AND r.expires_at >= $now
RETURN count(r) AS reservations, sum(r.gpu_count) AS gpus
