// Is any reservation ended before $before? (A cheap read before the history pruner's write.)
// @read
// @param before float
// @row id string
MATCH (r:Reservation)
WHERE r.ended_at < $before AND r.state <> 'active'
RETURN r.id AS id
LIMIT 1
