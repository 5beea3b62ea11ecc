// Which NIC serves each GPU of a host, and how close it is (pcie-switch, numa, host).
MATCH (:Host {name: $host})-[:HAS_GPU]->(g:GPU)-[a:NIC_AFFINITY]->(n:NIC)
RETURN g.index AS gpu, n.name AS nic, n.rail AS rail, a.via AS via
ORDER BY gpu
