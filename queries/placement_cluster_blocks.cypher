// The cluster's largest free blocks alone (fragment placement_free_blocks): the $blocks hosts
// and the $blocks NVLink domains with the most free GPUs, for the fragmentation facts. The
// multi-host statement (placement_leaves_fit) leaves them out and the engine sends this beside
// it, on another connection, when its first page goes out: the store runs the two at once
// (FalkorDB a read per thread), which took 1.3-2.4 ms off the 6.6-7.9 ms of the two in one
// statement at 100k GPUs (docs/benchmarks.md, "Stop 56"). Its `_scan` form reads them by a scan.
// @read
// @param blocks int
// @param domain_top int
// @param host_top int
// @param tie_buckets int
// @row host_blocks list<map>, domain_blocks list<map>
//@include placement_free_blocks
RETURN host_blocks, domain_blocks
