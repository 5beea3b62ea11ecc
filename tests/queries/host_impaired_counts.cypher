// Test only: the given hosts' impaired_gpus (fragments/host_impaired) as stored, null where unset.
// @read
// @param hosts list<string>
// @row host string, impaired int?
MATCH (h:Host)
WHERE h.name IN $hosts
RETURN h.name AS host, h.impaired_gpus AS impaired
ORDER BY host
