// Gives up a pending preemption (its GPUs were taken by someone else meanwhile): the pending
// reservation ends as 'failed' and its victims are no longer promised to it. No GPU changes.
// Locks the reservations involved by id before reading them.
// @write
// @param id string
// @param now float
// @row id any
OPTIONAL MATCH (x:Reservation)
WHERE x.id = $id OR x.preempt_by = $id
WITH x
ORDER BY x.id
FOREACH (y IN CASE WHEN x IS NULL THEN [] ELSE [x] END | SET y:Reservation) //@lock
WITH collect(x) AS locked
WITH locked, [y IN locked WHERE y.id = $id AND y.state = 'pending'] AS mine
WHERE size(mine) = 1
FOREACH (y IN [z IN locked WHERE z.id <> $id] | SET y.preempt_by = NULL, y.preempt_at = NULL)
FOREACH (y IN mine | SET y.state = 'failed', y.ended_at = $now)
RETURN $id AS id
