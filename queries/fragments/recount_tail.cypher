// Fragment (not a query): included with `//@include recount_tail` at the end of a write
// that changed GPU states, so the free-GPU counters of hosts, NVLink domains and leaves
// move in the same atomic statement. In: `carry` (any value to return) and `hosts` (the
// Host nodes whose GPUs changed). Out: `WITH DISTINCT carry`. A GPU counts as free when its
// state is free and its health is not failed.
UNWIND hosts AS h
MATCH (h)-[:HAS_GPU]->(y:GPU)
WITH carry, h, count(CASE WHEN y.state = 'free' AND coalesce(y.health, 'ok') <> 'failed' THEN 1 END) AS host_free
SET h.free_gpus = host_free
WITH carry, collect(h) AS hosts
UNWIND hosts AS h
OPTIONAL MATCH (h)-[:HAS_GPU]->(:GPU)-[:IN_DOMAIN]->(d:NVLinkDomain)
WITH carry, hosts, collect(DISTINCT d) AS domains
UNWIND (CASE WHEN size(domains) = 0 THEN [null] ELSE domains END) AS d
OPTIONAL MATCH (d)<-[:IN_DOMAIN]-(m:GPU)
WITH carry, hosts, d, count(CASE WHEN m.state = 'free' AND coalesce(m.health, 'ok') <> 'failed' THEN 1 END) AS domain_free
FOREACH (x IN CASE WHEN d IS NULL THEN [] ELSE [d] END | SET x.free_gpus = domain_free)
WITH DISTINCT carry, hosts
UNWIND hosts AS h
OPTIONAL MATCH (h)-[:HAS_NIC]->(:NIC)-[:UPLINK]->(leaf:Switch)
WITH carry, collect(DISTINCT leaf) AS leaves
UNWIND (CASE WHEN size(leaves) = 0 THEN [null] ELSE leaves END) AS leaf
OPTIONAL MATCH (leaf)<-[:UPLINK]-(:NIC)<-[:HAS_NIC]-(lh:Host)
WITH carry, leaf, collect(DISTINCT lh) AS leaf_hosts
FOREACH (x IN CASE WHEN leaf IS NULL THEN [] ELSE [leaf] END |
  SET x.free_gpus = reduce(total = 0, y IN leaf_hosts | total + coalesce(y.free_gpus, 0)))
WITH DISTINCT carry
