// Where two (or more) hosts sit in the fabric: leaves, spines, cores, pod, NIC speeds, leaf uplink
// capacity.
// @read
// @param hosts list<string>
// @row host string, leaves list<string>?, spines list<string>?, cores list<string>?, pod string?, cluster string?, nics list<map>
MATCH (h:Host)
WHERE h.name IN $hosts
OPTIONAL MATCH (h)-[:HAS_NIC]->(n:NIC)-[:UPLINK]->(leaf:Switch)
OPTIONAL MATCH (leaf)-[u:UPLINK]->(:Switch)
WITH h, n, leaf, sum(u.bandwidth_gbps) AS leaf_uplink_gbps
RETURN h.name AS host, h.leaves AS leaves, h.spines AS spines, h.cores AS cores, h.pod AS pod, h.cluster AS cluster,
       collect({nic: n.name, rate_gbps: n.rate_gbps, leaf: leaf.name, leaf_uplink_gbps: leaf_uplink_gbps}) AS nics
