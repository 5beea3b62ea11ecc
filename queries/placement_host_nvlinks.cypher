// Direct GPU-to-GPU NVLink edges of the given hosts (bridged pairs, cube-meshes). Links to
// NVSwitches need no traversal: each GPU carries their total as nvswitch_gbps.
// @read
// @param hosts list<string>
// @row gpu string, peer string, bandwidth_gbps float?
MATCH (h:Host)-[:HAS_GPU]->(g:GPU)-[l:NVLINK]->(peer:GPU)
WHERE h.name IN $hosts
RETURN g.uuid AS gpu, peer.uuid AS peer, l.bandwidth_gbps AS bandwidth_gbps
