// Group commit of release_reservation: ends the live reservations among $ids and frees the GPUs
// each still holds, in one statement (one transaction): release_batch_take. Returns one row with
// the ids it ended and, in the same order, each one's properties and the GPUs it holds (an id not
// among them is answered by release_reservation and end_empty_reservation on their own).
// @write
// @param ids list<string>
// @param now float
// @param state string
// @row ids any, reservations any, taken any
//@include release_batch_take
RETURN collect(r.id) AS ids, collect(properties(r)) AS reservations, collect(held) AS taken
