// The history pruner: deletes reservations that ended before $before (released, expired or
// preempted longer ago than the service's reservation_history_s), with their remaining HOLDS and
// HOLDS_SLICE edges; a GPU or MIG slice they held is another reservation's by now or free, and
// keeps its state (the edges are history only). It reads a page of $limit of them, the earliest
// ended first (ties by id) after ($from, $from_id) (the previous page's `last`, `last_id`: a
// reservation left for later does not fill every page), and deletes those no GPU or MIG slice is still marked for (an orphan: the
// lease job's sweep frees a GPU; a slice keeps the mark until it is reserved again). An ended
// reservation never becomes live again, so nothing is read again after the locks. Locks in the
// global order (docs/store.md): the GPUs at the end of its edges by uuid (deleting an edge locks
// both ends in Neo4j), then its MIG slices by uuid, then the reservations by id; the store that
// runs one write at a time skips them (lock block). `examined`: the page's size (fewer than
// $limit: none left); `last`, `last_id`: the page's last reservation's end and id.
// @write
// @param before float
// @param from float
// @param from_id string
// @param limit int
// @row pruned int, examined int, last float?, last_id string?
MATCH (r:Reservation)
WHERE r.ended_at < $before AND r.ended_at >= $from AND r.state <> 'active'
  AND (r.ended_at > $from OR r.id > $from_id)
WITH r
ORDER BY r.ended_at, r.id
LIMIT $limit
WITH collect(r) AS page
WITH page, size(page) AS examined,
     CASE WHEN size(page) = 0 THEN null ELSE page[size(page) - 1] END AS last_one
WITH page, examined, last_one.ended_at AS last, last_one.id AS last_id
UNWIND (CASE WHEN size(page) = 0 THEN [null] ELSE page END) AS r
OPTIONAL MATCH (r)-[:HOLDS]->(marked:GPU)
WHERE marked.reservation = r.id
WITH examined, last, last_id, r, count(marked) AS marked_gpus
OPTIONAL MATCH (r)-[:HOLDS_SLICE]->(marked_slice:MigSlice)
WHERE marked_slice.reservation = r.id
WITH examined, last, last_id, r, marked_gpus, count(marked_slice) AS marked_slices
WITH examined, last, last_id,
     collect(CASE WHEN r IS NOT NULL AND marked_gpus = 0 AND marked_slices = 0 THEN r END) AS ended
//@lock-begin
UNWIND (CASE WHEN size(ended) = 0 THEN [null] ELSE ended END) AS lock_r
OPTIONAL MATCH (lock_r)-[:HOLDS]->(lock_gpu:GPU)
WITH DISTINCT examined, last, last_id, ended, lock_gpu
ORDER BY lock_gpu.uuid
WITH examined, last, last_id, ended, collect(lock_gpu) AS lock_gpus
FOREACH (x IN lock_gpus | SET x:GPU)
WITH examined, last, last_id, ended
UNWIND (CASE WHEN size(ended) = 0 THEN [null] ELSE ended END) AS lock_r
OPTIONAL MATCH (lock_r)-[:HOLDS_SLICE]->(lock_slice:MigSlice)
WITH DISTINCT examined, last, last_id, ended, lock_slice
ORDER BY lock_slice.uuid
WITH examined, last, last_id, ended, collect(lock_slice) AS lock_slices
FOREACH (x IN lock_slices | SET x:MigSlice)
WITH examined, last, last_id, ended
UNWIND (CASE WHEN size(ended) = 0 THEN [null] ELSE ended END) AS lock_r
WITH examined, last, last_id, ended, lock_r
ORDER BY lock_r.id
WITH examined, last, last_id, ended, collect(lock_r) AS lock_reservations
FOREACH (x IN lock_reservations | SET x:Reservation)
WITH examined, last, last_id, ended
//@lock-end
FOREACH (x IN ended | DETACH DELETE x)
RETURN size(ended) AS pruned, examined, last, last_id
