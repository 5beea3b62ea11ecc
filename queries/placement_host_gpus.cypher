// Everything placement needs to judge the given hosts, one row per GPU (flat rows parse
// fastest): state, health and load, NVLink domain, nearest NIC (rail, leaf, speed), its share of
// the NIC ports serving it (nic_share_rate_gbps, Gb/s, written by ingest; null on a graph written
// before), and the host's fabric position; memory in use (a process outside the service); error
// counts (#17): NVLink replay+recovery+CRC errors, critical XIDs seen, and the nearest NIC port's
// symbol/link-downed/receive errors.
// @read
// @param hosts list<string>
// @row host string, rack string?, scalable_unit string?, leaves list<string>?, pod string?, cluster string?
// @row received_at float?, uuid string, index int, model string, memory_mib int?, state string
// @row health string?, temperature_c float?, utilization_pct float?, domain string?, domain_kind string?
// @row nic string?, rail int?, nic_rate_gbps float?, nic_share_rate_gbps float?, via string?, leaf string?
// @row nvswitch_gbps float, lease_expires_at float?, mig_mode bool?, nic_state string?
// @row nvlink_errors int, xid_errors int, nic_errors int, memory_used_mib int?
MATCH (h:Host)-[:HAS_GPU]->(g:GPU)
WHERE h.name IN $hosts
OPTIONAL MATCH (g)-[:IN_DOMAIN]->(d:NVLinkDomain)
OPTIONAL MATCH (g)-[a:NIC_AFFINITY]->(n:NIC)
OPTIONAL MATCH (n)-[:UPLINK]->(leaf:Switch)
RETURN h.name AS host, h.rack AS rack, h.scalable_unit AS scalable_unit, h.leaves AS leaves, h.pod AS pod, h.cluster AS cluster,
       h.received_at AS received_at, g.uuid AS uuid, g.index AS index, g.model AS model,
       g.memory_mib AS memory_mib, g.state AS state, g.health AS health, g.temperature_c AS temperature_c,
       g.utilization_pct AS utilization_pct, d.uuid AS domain, d.kind AS domain_kind, n.name AS nic,
       n.rail AS rail, n.rate_gbps AS nic_rate_gbps, g.nic_share_rate_gbps AS nic_share_rate_gbps, a.via AS via, leaf.name AS leaf,
       g.nvswitch_gbps AS nvswitch_gbps, g.lease_expires_at AS lease_expires_at, g.mig_mode AS mig_mode, n.state AS nic_state,
       coalesce(g.nvlink_replay_errors, 0) + coalesce(g.nvlink_recovery_errors, 0) + coalesce(g.nvlink_crc_errors, 0) AS nvlink_errors,
       size(coalesce(g.xid_errors, [])) AS xid_errors,
       coalesce(n.symbol_errors, 0) + coalesce(n.link_downed, 0) + coalesce(n.port_rcv_errors, 0) AS nic_errors,
       g.memory_used_mib AS memory_used_mib
