// Fragment (not a query): included with `//@include lock_counters` by every write that will
// change GPU states, right after it has write-locked those GPUs (in uuid order) and before it
// reads anything it decides on. It write-locks every node whose free-GPU counter those GPUs
// feed, in one global order (hosts by name, then NVLink domains by uuid, then leaf switches by
// name), so under Neo4j's read committed isolation no other writer can change a GPU under a
// counter this statement will recount until it commits: the recount reads current data, and
// two writers cannot deadlock on the counters. A store that runs writes one at a time (FalkorDB)
// needs no locks: there the lines between the lock markers are left out (graphsvc/store/queries.py,
// "Locks"; taking them cost FalkorDB ~2 ms per batch statement of 16). In: `gpus` (GPU nodes, may be
// empty), `keep` (any value carried through). Out: `WITH gpus, keep`, one row.
// Each kind is collected in key order and locked by one FOREACH over that list, so the
// locks are taken in exactly that order whatever the plan. A lock is taken by setting a label the
// node already has (`SET x:Host`): Neo4j takes the exclusive node lock although nothing changes,
// and nothing is stored. (Setting a key to itself, `SET x.name = x.name`, also blocks others, but
// 200 writers taking ordered locks that way deadlocked 519 times in a test; by label, never.)
//@lock-begin
UNWIND (CASE WHEN size(gpus) = 0 THEN [null] ELSE gpus END) AS lock_gpu
OPTIONAL MATCH (lock_host:Host)-[:HAS_GPU]->(lock_gpu)
WITH DISTINCT gpus, keep, lock_host
ORDER BY lock_host.name
WITH gpus, keep, collect(lock_host) AS lock_hosts
FOREACH (x IN lock_hosts | SET x:Host)
WITH gpus, keep, lock_hosts
UNWIND (CASE WHEN size(lock_hosts) = 0 THEN [null] ELSE lock_hosts END) AS lock_host
OPTIONAL MATCH (lock_host)-[:HAS_GPU]->(:GPU)-[:IN_DOMAIN]->(lock_domain:NVLinkDomain)
WITH DISTINCT gpus, keep, lock_hosts, lock_domain
ORDER BY lock_domain.uuid
WITH gpus, keep, lock_hosts, collect(lock_domain) AS lock_domains
FOREACH (x IN lock_domains | SET x:NVLinkDomain)
WITH gpus, keep, lock_hosts
UNWIND (CASE WHEN size(lock_hosts) = 0 THEN [null] ELSE lock_hosts END) AS lock_host
OPTIONAL MATCH (lock_host)-[:HAS_NIC]->(:NIC)-[:UPLINK]->(lock_leaf:Switch)
WITH DISTINCT gpus, keep, lock_leaf
ORDER BY lock_leaf.name
WITH gpus, keep, collect(lock_leaf) AS lock_leaves
FOREACH (x IN lock_leaves | SET x:Switch)
//@lock-end
WITH gpus, keep
