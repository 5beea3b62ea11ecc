// Which NIC serves each GPU of the named hosts, and how close it is (pcie-switch, numa, host).
// @read
// @param hosts list<string>
// @row host string, gpu int, nic string?, rail int?, via string?
UNWIND $hosts AS wanted
MATCH (h:Host {name: wanted})-[:HAS_GPU]->(g:GPU)-[a:NIC_AFFINITY]->(n:NIC)
RETURN h.name AS host, g.index AS gpu, n.name AS nic, n.rail AS rail, a.via AS via
ORDER BY host, gpu
