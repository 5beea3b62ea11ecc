// Ends a pending preemption before it takes any GPU: as 'failed' when its GPUs were taken by
// someone else meanwhile (preemption.complete), as 'released' when its holder releases it during
// the grace period (ReservationService.release). Its victims are no longer promised to it: they
// keep their GPUs and lease, and `spared` lists them (id, holder: each hears that the warning is
// withdrawn). No GPU changes. Locks the reservations involved by id before reading them. No row
// when it is not pending (already ended, or completed meanwhile).
// @write
// @param id string
// @param now float
// @param state string
// @row id any, spared list<map>
OPTIONAL MATCH (x:Reservation)
WHERE x.id = $id OR x.preempt_by = $id
WITH x
ORDER BY x.id
FOREACH (y IN CASE WHEN x IS NULL THEN [] ELSE [x] END | SET y:Reservation) //@lock
WITH collect(x) AS locked
WITH locked, [y IN locked WHERE y.id = $id AND y.state = 'pending'] AS mine
WHERE size(mine) = 1
WITH mine, [z IN locked WHERE z.id <> $id] AS spared
WITH mine, spared, [z IN spared WHERE z.state = 'active' | {id: z.id, holder: z.holder}] AS told
FOREACH (y IN spared | SET y.preempt_by = NULL, y.preempt_at = NULL)
FOREACH (y IN mine | SET y.state = $state, y.ended_at = $now)
RETURN $id AS id, told AS spared
