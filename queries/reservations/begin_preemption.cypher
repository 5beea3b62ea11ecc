// Starts a preemption with a grace period, in one statement: creates the preempting
// reservation as 'pending' (it holds no GPU yet; the GPUs it will take and the victims are
// on it) and marks each victim with who preempts it and when. No GPU or counter changes.
// Locks the victims (reservations, by id) before it reads them: all must still be live,
// preemptible, of lower priority and not already promised to another preemption; otherwise
// nothing is written and no row returned.
// @write
// @param props any
// @param victims any
// @row id any
OPTIONAL MATCH (v:Reservation)
WHERE v.id IN $victims
WITH v
ORDER BY v.id
FOREACH (x IN CASE WHEN v IS NULL THEN [] ELSE [v] END | SET x:Reservation) //@lock
WITH collect(v) AS named
WITH named, size([x IN named WHERE x.state = 'active' AND x.preemptible = true AND x.priority < $props.priority
                  AND x.preempt_by IS NULL]) AS ok
WHERE ok = size($victims)
FOREACH (x IN named | SET x.preempt_by = $props.id, x.preempt_at = $props.grace_ends_at)
CREATE (p:Reservation)
SET p += $props
RETURN p.id AS id
