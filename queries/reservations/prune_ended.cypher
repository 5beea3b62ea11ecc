// The history pruner: deletes up to $limit reservations that ended before $before (released,
// expired or preempted longer ago than the service's reservation_history_s), with their
// remaining HOLDS and HOLDS_SLICE edges; a GPU or MIG slice they held is another reservation's
// by now or free, and keeps its state (the edges are history only). A reservation that a GPU or
// slice is still marked for (an orphan, which the lease job's sweep frees) is left for a later
// run. An ended reservation never becomes live again, so its nodes need no second look after
// the locks. Locks in the global order (docs/store.md): the GPUs at the end of its edges by uuid
// (deleting an edge locks both ends in Neo4j), then its MIG slices by uuid, then the
// reservations by id; the store that runs one write at a time skips them (lock block).
// Which reservations go first is not ordered: any that ended before $before may go, and the
// next run takes the rest.
// @write
// @param before float
// @param limit int
// @row pruned int
MATCH (r:Reservation)
WHERE r.ended_at < $before AND r.state <> 'active'
WITH r
LIMIT $limit
OPTIONAL MATCH (r)-[:HOLDS]->(marked:GPU)
WHERE marked.reservation = r.id
WITH r, count(marked) AS marked_gpus
OPTIONAL MATCH (r)-[:HOLDS_SLICE]->(marked_slice:MigSlice)
WHERE marked_slice.reservation = r.id
WITH r, marked_gpus, count(marked_slice) AS marked_slices
WHERE marked_gpus = 0 AND marked_slices = 0
WITH collect(r) AS ended
//@lock-begin
UNWIND (CASE WHEN size(ended) = 0 THEN [null] ELSE ended END) AS lock_r
OPTIONAL MATCH (lock_r)-[:HOLDS]->(lock_gpu:GPU)
WITH DISTINCT ended, lock_gpu
ORDER BY lock_gpu.uuid
WITH ended, collect(lock_gpu) AS lock_gpus
FOREACH (x IN lock_gpus | SET x:GPU)
WITH ended
UNWIND (CASE WHEN size(ended) = 0 THEN [null] ELSE ended END) AS lock_r
OPTIONAL MATCH (lock_r)-[:HOLDS_SLICE]->(lock_slice:MigSlice)
WITH DISTINCT ended, lock_slice
ORDER BY lock_slice.uuid
WITH ended, collect(lock_slice) AS lock_slices
FOREACH (x IN lock_slices | SET x:MigSlice)
WITH ended
UNWIND (CASE WHEN size(ended) = 0 THEN [null] ELSE ended END) AS lock_r
WITH ended, lock_r
ORDER BY lock_r.id
WITH ended, collect(lock_r) AS lock_reservations
FOREACH (x IN lock_reservations | SET x:Reservation)
WITH ended
//@lock-end
UNWIND ended AS r
DETACH DELETE r
RETURN count(*) AS pruned
