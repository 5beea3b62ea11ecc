// One page of reservations by id (keyset pagination), filtered by holder and state.
// @read
// @param after string
// @param first int
// @param holder string
// @param state string
// @row id string
MATCH (r:Reservation)
WHERE r.id > $after AND ($holder = '' OR r.holder = $holder) AND ($state = '' OR r.state = $state)
RETURN r.id AS id
ORDER BY id
LIMIT $first
