// A moment's group commits in one statement, where the store runs writes one at a time
// (FalkorDB): a batch of releases (release_batch) and a batch of single-host reserves
// (reserve_in_host_batch, the requests sharing one key), one after the other in one transaction,
// each request with its own answer. The releases go first, so the reserves may take the GPUs they
// freed. Two statements paid the store's fixed cost per statement twice (the append-only write and
// its fsync, the command, the reply, a round trip): side by side on one SU, a batch of six of each
// cost ~10.7 ms of the store's CPU and ~15.7 ms of wall time as two statements against ~9.3 and
// ~12.0 ms as one (benchmarks/merged_statement.py). The service as deployed: 0.40 -> 0.25
// statements a reservation cycle and ~10% less of the service's CPU, the store's CPU and the rate
// the same within the minute's spread (docs/benchmarks.md, "Stop 73"). Not sent where
// writes run concurrently (Neo4j): there its two halves would lock GPUs and counters in two rounds,
// not in the one global order every write keeps, and the service sends the two statements.
// Its derived `_scan` form reads the candidates by a scan (reserve_batch_candidates_scan).
// @write
// @param exclude list<string>
// @param ids list<string>
// @param model string
// @param models list<string>
// @param now float
// @param requests list<map>
// @param scan int
// @param sizes list<int>
// @param stale_before float
// @param state string
// @row ids any, reservations any, taken any, released_ids any, released_reservations any, released_taken any
CALL () {
//@include release_batch_take
  RETURN collect(r.id) AS released_ids, collect(properties(r)) AS released_reservations, collect(held) AS released_taken
}
CALL () {
//@include reserve_batch_candidates
//@include reserve_batch_take
}
RETURN ids, reservations, taken, released_ids, released_reservations, released_taken
