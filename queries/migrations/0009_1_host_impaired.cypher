// Graph v8 -> v9: Host.impaired_gpus (fragments/host_impaired), how many of a host's GPUs the
// store's per-GPU placement test could refuse whatever a request's bounds (failed, degraded, MIG,
// another model, no NIC affinity via a PCIe switch or its NIC down): placement_leaves_fit calls a
// host with none ready without reading its GPUs. Until this runs a host has no value, which reads
// as "test each GPU" (coalesce(h.impaired_gpus, 1)). Idempotent.
// @write
// @row hosts int
MATCH (h:Host)
CALL (h) {
//@include host_impaired
}
RETURN count(h) AS hosts
