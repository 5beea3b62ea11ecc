// Fragment (not a query): the per-GPU hard constraints the store can judge, as one boolean
// expression over `g` (a free GPU), `a` (its NIC_AFFINITY edge) and `n` (that NIC), each
// possibly null. It is a sound prefilter: Python (graphsvc/placement/select.py: eligible)
// decides exactly, so this may let through what Python then refuses, never the reverse.
// $model is a lower-case substring of every accepted model name; $filters holds healthy
// (bool: degraded is refused too; failed always is), min_memory_mib (-1: none), max_temperature_c,
// max_utilization_pct and max_memory_used_mib (huge: none; an exclusive job's busy bounds),
// nic_affinity (bool) and rail_up (bool: multi-host, the nearest NIC's port must not be down).
(g IS NOT NULL AND toLower(g.model) CONTAINS $model AND NOT coalesce(g.mig_mode, false)
  AND toLower(coalesce(g.health, 'ok')) <> 'failed'
  AND NOT ($filters.healthy AND toLower(coalesce(g.health, 'ok')) = 'degraded')
  AND coalesce(g.memory_mib, -1) >= $filters.min_memory_mib
  AND coalesce(g.temperature_c, 0.0) <= $filters.max_temperature_c
  AND coalesce(g.utilization_pct, 0.0) < $filters.max_utilization_pct
  AND coalesce(g.memory_used_mib, 0) < $filters.max_memory_used_mib
  AND (NOT $filters.nic_affinity OR coalesce(a.via, '') = 'pcie-switch')
  AND (NOT $filters.rail_up OR NOT toLower(coalesce(n.state, '')) IN ['down', 'init'])) AS usable
