// The switches above the named hosts' leaves, one row per host: its spines and the cores above
// those (hop counts, graphsvc.placement.model.hops). Read apart from placement_host_gpus, whose
// flat rows repeat the host's columns on every GPU's row: 24 names more on each of a host's eight
// rows doubled the values a wide search parsed (stop 62).
// @read
// @param hosts list<string>
// @row host string, spines list<string>?, cores list<string>?
MATCH (h:Host)
WHERE h.name IN $hosts
RETURN h.name AS host, h.spines AS spines, h.cores AS cores
