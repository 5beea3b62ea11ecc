// The given NICs that are cabled to another cluster's switch, with that switch and its cluster
// (explains a rejected fabric: a NIC has one cable, in one cluster's fabric. One cluster's import
// cabling a NIC another cluster's fabric holds gave it a second cable: two leaves, its host one
// hop from both clusters' hosts, and placement offered sets across both). The first 20 by key.
// @read
// @param cluster string
// @param nic_uuids list<string>
// @row nic string, switch string, cluster string?
MATCH (n:NIC)-[:UPLINK]->(s:Switch)
WHERE n.uuid IN $nic_uuids AND coalesce(s.cluster, '') <> $cluster
RETURN n.uuid AS nic, s.name AS switch, s.cluster AS cluster
ORDER BY nic, switch
LIMIT 20
