// Fragment (not a query): the per-domain work of placement_domains_fit and
// placement_domains_fit_each_model. In `units` (a page of NVLink domains); in each, the free GPUs
// (free, one of $virtual_free, or a lease lapsed before $now) that meet the per-GPU constraints
// (placement_usable) on hosts neither excluded nor stale: a domain qualifies with $n of them.
// Out: `scanned` (the page's domains) and `found` ({unit, free, hosts}: the qualifying domains
// and the hosts of their usable GPUs), one row per input row.
// Traversals from bound nodes name no label at an end the schema allows one label at (a label test
// per row on FalkorDB; docs/store.md, "No label test the schema already makes").
CALL (units) {
  UNWIND units AS d
  OPTIONAL MATCH (d)<-[:IN_DOMAIN]-(g)
  WHERE g.state = 'free' OR g.uuid IN $virtual_free OR (g.state = 'reserved' AND g.lease_expires_at < $now)
  OPTIONAL MATCH (h)-[:HAS_GPU]->(g)
  OPTIONAL MATCH (g)-[a:NIC_AFFINITY]->(n)
  WITH d, h,
//@include placement_usable
  WITH d, CASE WHEN usable AND NOT h.name IN $exclude AND coalesce(h.received_at, $now) >= $stale_before
               THEN h.name END AS member
  WITH d, collect(DISTINCT member) AS members, count(member) AS usable_count
  RETURN count(d) AS scanned,
         collect(CASE WHEN usable_count >= $n THEN {unit: d.uuid, free: d.free_gpus, hosts: members} END) AS found
}
