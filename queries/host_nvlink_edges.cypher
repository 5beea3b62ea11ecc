// Every NVLink edge of the named hosts' GPUs, to peer GPUs and to NVSwitches, with lane counts.
// @read
// @param hosts list<string>
// @row host string, gpu int, uuid string, peer string, peer_kind string, links int, bandwidth_gbps float?
// @row generation int?
UNWIND $hosts AS wanted
MATCH (h:Host {name: wanted})-[:HAS_GPU]->(g:GPU)-[l:NVLINK]->(peer)
RETURN h.name AS host, g.index AS gpu, g.uuid AS uuid, peer.uuid AS peer, labels(peer)[0] AS peer_kind,
       l.links AS links, l.bandwidth_gbps AS bandwidth_gbps, l.generation AS generation
ORDER BY host, gpu, peer
