// Fragment (not a query): the body of a subquery that imports a host `h` (one row per host) and
// sets Host.impaired_gpus, the number of its GPUs that fragment placement_usable could refuse
// for a reason other than a request's per-GPU bounds (memory, temperature, busy): failed or
// degraded health, MIG mode, a model other than the host's gpu_model (or none), no NIC_AFFINITY
// edge, or one not via 'pcie-switch' or to a NIC whose port is down or init. Every GPU counts,
// free or not: reserving and releasing move no GPU in or out, so the reservation path never
// writes it; the statements that write those facts (recount_hosts, the health
// writes of ingest_host_unchanged, ingest_hosts_unchanged and update_gpu_metrics, the migration;
// ingest_host counts alike from its own parameters)
// recount it with this fragment after `h.gpu_model` is set. A host with impaired_gpus = 0 has
// every free GPU usable under the default bounds: placement_leaves_fit reads none of its GPUs to
// say so (it says why a stale value costs work, never an answer). Out: `impaired_hosts`, one row.
// Traversals from bound nodes name no label at an end the schema allows one label at (a label test
// per row on FalkorDB; docs/store.md, "No label test the schema already makes").
//@include host_impaired_count
  SET h.impaired_gpus = impaired
  RETURN count(*) AS impaired_hosts
