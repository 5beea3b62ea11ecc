// Which of the given switches another cluster's fabric holds (explains a rejected fabric: a
// switch is in one cluster's fabric; ingest_fabric). The first 20 by name.
// @read
// @param cluster string
// @param switch_names list<string>
// @row switch string, cluster string
MATCH (s:Switch)
WHERE s.name IN $switch_names AND s.cluster <> $cluster
RETURN s.name AS switch, s.cluster AS cluster
ORDER BY switch
LIMIT 20
