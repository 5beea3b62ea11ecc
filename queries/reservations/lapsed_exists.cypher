// Is any live reservation past its lease? (A cheap read before the reaper's writes.)
// @read
// @param now float
// @row id string
MATCH (r:Reservation)
WHERE r.state = 'active' AND r.expires_at < $now
RETURN r.id AS id
LIMIT 1
