// Pending preemptions ready to complete: the grace period is over, or every victim has
// already ended (released or expired). Read only; complete_preemption checks again under locks.
// @read
// @param limit int
// @param now float
// @row id any
MATCH (p:Reservation)
WHERE p.state = 'pending'
OPTIONAL MATCH (v:Reservation)
WHERE v.id IN p.pending_victims AND v.state = 'active'
WITH p, count(v) AS live
WHERE p.grace_ends_at <= $now OR live = 0
RETURN p.id AS id
ORDER BY id
LIMIT $limit
