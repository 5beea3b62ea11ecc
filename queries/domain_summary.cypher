// NVLink domains by kind and size, with their free GPUs.
// @read
// @row kind string?, size int?, domains int, free_gpus float?
MATCH (d:NVLinkDomain)
RETURN d.kind AS kind, d.size AS size, count(d) AS domains, sum(d.free_gpus) AS free_gpus
ORDER BY kind, size
