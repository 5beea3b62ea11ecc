// Fragment (not a query): the rule of fragments/host_impaired without its write, for a read that
// checks the stored Host.impaired_gpus against a recount (counter_drift). It follows a clause that
// binds a host `h` (one row per host); out: `h, impaired`, one row per host. host_impaired
// includes it and adds the SET, so the rule is written once.
// A read-only statement creates no edge, so binding `ia` here reads every NIC_AFFINITY edge
// (docs/store.md, "An edge type the statement creates").
  OPTIONAL MATCH (h)-[:HAS_GPU]->(ig)
  OPTIONAL MATCH (ig)-[ia:NIC_AFFINITY]->(inic)
  WITH h, ig, count(ia) AS links,
       sum(CASE WHEN coalesce(ia.via, '') = 'pcie-switch' AND NOT toLower(coalesce(inic.state, '')) IN ['down', 'init']
                THEN 0 ELSE 1 END) AS bad_links
  WITH h, toInteger(sum(CASE WHEN ig IS NULL THEN 0
                   WHEN links = 0 OR bad_links > 0 OR coalesce(ig.mig_mode, false)
                        OR toLower(coalesce(ig.health, 'ok')) IN ['failed', 'degraded']
                        OR coalesce(ig.model <> h.gpu_model, true) THEN 1
                   ELSE 0 END)) AS impaired
