// Test only: overwrite (or, with null, remove) the given hosts' impaired_gpus, as a graph from
// before v9 or a counter gone stale would hold it, without touching any GPU.
// @write
// @param hosts list<string>
// @param value int?
// @row hosts int
MATCH (h:Host)
WHERE h.name IN $hosts
SET h.impaired_gpus = $value
RETURN count(h) AS hosts
