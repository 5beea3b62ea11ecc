// One page of reservations by id (keyset pagination), filtered by holder and by state as readers
// see it: a live lease past its end is expired before the reaper records it (service.as_seen).
// @read
// @param after string
// @param first int
// @param holder string
// @param now float
// @param state string
// @row id string
MATCH (r:Reservation)
WHERE r.id > $after AND ($holder = '' OR r.holder = $holder)
  AND ($state = '' OR CASE WHEN r.state = 'active' AND r.expires_at < $now THEN 'expired' ELSE r.state END = $state)
RETURN r.id AS id
ORDER BY id
LIMIT $first
