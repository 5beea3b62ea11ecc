// The hosts with a NIC cabled to a switch, with their free GPUs, for the explorer's fabric view.
// @read
// @param leaf string
// @row name string, free_gpus int?, received_at float?
MATCH (s:Switch {name: $leaf})<-[:UPLINK]-(:NIC)<-[:HAS_NIC]-(h:Host)
RETURN DISTINCT h.name AS name, h.free_gpus AS free_gpus, h.received_at AS received_at
ORDER BY name
