// Graph v7 -> v8: Host.spines (the switches above the leaves its NICs are cabled to, whatever
// their tier) and Host.cores (the switches above those), as the fabric import and ingest_host
// write them. Hop counts
// read them (graphsvc.placement.model.hops: a shared spine is 3 hops, a shared core 5): one pod
// per host said 5 for dual-plane hosts meeting under a second plane's spine, and 5 for leaf
// islands no switch joins. Spines are collected first, then their cores, so a host reads 8 x 16
// rows rather than 8 x 16 x its cores. Idempotent.
// @write
// @row hosts int
MATCH (h:Host)
OPTIONAL MATCH (h)-[:HAS_NIC]->(:NIC)-[:UPLINK]->(:Switch)-[:UPLINK]->(spine:Switch)
WITH h, collect(DISTINCT spine) AS spines
UNWIND (CASE WHEN size(spines) = 0 THEN [null] ELSE spines END) AS spine
OPTIONAL MATCH (spine)-[:UPLINK]->(core:Switch)
WITH h, spines, collect(DISTINCT core.name) AS cores
SET h.spines = [s IN spines | s.name], h.cores = cores
RETURN count(h) AS hosts
