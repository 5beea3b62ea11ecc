// Fragment (not a query): the per-host work of placement_hosts_fit and
// placement_hosts_fit_each_model. In `units` (a page of hosts); in each host, the free GPUs (free,
// one of $virtual_free, or a lease lapsed before $now) that meet the per-GPU constraints
// (placement_usable) counted per NVLink domain: a host qualifies with $n of them ($mode 'none')
// or $n in one NVLink domain ($mode 'domain'). Out: `scanned` (the page's hosts) and `found`
// ({unit, free} of the qualifying hosts), one row per input row.
// Traversals from bound nodes name no label at an end the schema allows one label at (a label test
// per row on FalkorDB; docs/store.md, "No label test the schema already makes").
CALL (units) {
  UNWIND units AS h
  OPTIONAL MATCH (h)-[:HAS_GPU]->(g)
  WHERE g.state = 'free' OR g.uuid IN $virtual_free OR (g.state = 'reserved' AND g.lease_expires_at < $now)
  OPTIONAL MATCH (g)-[:IN_DOMAIN]->(d)
  OPTIONAL MATCH (g)-[a:NIC_AFFINITY]->(n)
  WITH h, d,
//@include placement_usable
  WITH h, d, toInteger(sum(CASE WHEN usable THEN 1 ELSE 0 END)) AS in_group
  WITH h, toInteger(sum(in_group)) AS total, max(CASE WHEN d IS NULL THEN 0 ELSE in_group END) AS in_domain
  RETURN count(h) AS scanned,
         collect(CASE WHEN (CASE WHEN $mode = 'none' THEN total ELSE in_domain END) >= $n
                 THEN {unit: h.name, free: h.free_gpus} END) AS found
}
