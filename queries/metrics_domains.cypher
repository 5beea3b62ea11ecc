// Free GPUs per NVLink domain (with its GPU model), for /metrics.
// @read
// @row domain string?, model string, free int
MATCH (d:NVLinkDomain)
RETURN d.uuid AS domain, coalesce(d.gpu_model, '') AS model, coalesce(d.free_gpus, 0) AS free
