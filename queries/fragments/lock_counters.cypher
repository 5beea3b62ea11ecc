// Fragment (not a query): included with `//@include lock_counters` by every write that will
// change GPU states, right after it has write-locked those GPUs (in uuid order) and before it
// reads anything it decides on. It write-locks every node whose free-GPU counter those GPUs
// feed, in one global order (hosts by name, then NVLink domains by uuid, then leaf switches by
// name), so under Neo4j's read committed isolation no other writer can change a GPU under a
// counter this statement will recount until it commits: the recount reads current data, and
// two writers cannot deadlock on the counters. (FalkorDB runs writes one at a time: there it is
// only a few cheap SETs.) In: `gpus` (GPU nodes, may be empty), `keep` (any value carried
// through). Out: `WITH gpus, keep`, one row.
// A lock is taken by setting a node's key to itself (`SET x.uuid = x.uuid`): Neo4j takes the
// exclusive lock although nothing changes, and nothing extra is stored.
UNWIND (CASE WHEN size(gpus) = 0 THEN [null] ELSE gpus END) AS lock_gpu
OPTIONAL MATCH (lock_host:Host)-[:HAS_GPU]->(lock_gpu)
WITH DISTINCT gpus, keep, lock_host
ORDER BY lock_host.name
FOREACH (x IN CASE WHEN lock_host IS NULL THEN [] ELSE [lock_host] END | SET x.name = x.name)
WITH gpus, keep, collect(lock_host) AS lock_hosts
UNWIND (CASE WHEN size(lock_hosts) = 0 THEN [null] ELSE lock_hosts END) AS lock_host
OPTIONAL MATCH (lock_host)-[:HAS_GPU]->(:GPU)-[:IN_DOMAIN]->(lock_domain:NVLinkDomain)
WITH DISTINCT gpus, keep, lock_hosts, lock_domain
ORDER BY lock_domain.uuid
FOREACH (x IN CASE WHEN lock_domain IS NULL THEN [] ELSE [lock_domain] END | SET x.uuid = x.uuid)
WITH gpus, keep, lock_hosts, count(lock_domain) AS locked_domains
UNWIND (CASE WHEN size(lock_hosts) = 0 THEN [null] ELSE lock_hosts END) AS lock_host
OPTIONAL MATCH (lock_host)-[:HAS_NIC]->(:NIC)-[:UPLINK]->(lock_leaf:Switch)
WITH DISTINCT gpus, keep, lock_leaf
ORDER BY lock_leaf.name
FOREACH (x IN CASE WHEN lock_leaf IS NULL THEN [] ELSE [lock_leaf] END | SET x.name = x.name)
WITH gpus, keep, count(lock_leaf) AS locked_leaves
WITH gpus, keep
