// Every NVLink edge of one host's GPUs, to peer GPUs and to NVSwitches, with lane counts.
MATCH (:Host {name: $name})-[:HAS_GPU]->(g:GPU)-[l:NVLINK]->(peer)
RETURN g.index AS gpu, g.uuid AS uuid, peer.uuid AS peer, labels(peer)[0] AS peer_kind, l.links AS links,
       l.bandwidth_gbps AS bandwidth_gbps, l.generation AS generation
