// Live reservations and the GPUs they hold, for /metrics.
MATCH (r:Reservation)
WHERE r.state = 'active' AND r.expires_at >= $now
RETURN count(r) AS reservations, sum(r.gpu_count) AS gpus
