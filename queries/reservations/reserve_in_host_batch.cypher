// Group commit of reserve_in_host: several single-host requests ($requests, in arrival order,
// sharing the accepted models, excluded hosts and staleness cut-off) matched and taken in one
// statement (one transaction), each with its own answer. The candidate hosts are read once for
// the batch (reserve_batch_candidates: by the free-count index; this query's derived `_scan`
// form reads them by a scan of every host, for clusters of at most
// `fastpath.SCAN_EVERY_HOST_UP_TO` hosts), then reserve_batch_take serves the requests from
// these candidates and returns one row. reserve_release_batch is the same with a batch of
// releases before it, in one statement.
// @write
// @param exclude list<string>
// @param model string
// @param models list<string>
// @param now float
// @param requests list<map>
// @param scan int
// @param sizes list<int>
// @param stale_before float
// @row ids any, reservations any, taken any
//@include reserve_batch_candidates
//@include reserve_batch_take
