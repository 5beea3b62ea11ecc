// Graph v6 -> v7: Switch.home_leaf, set on each cabled host's first leaf in each cluster it is
// cabled to (lowest rail, a leaf without one counting as rail 0, then name), as ingest_host sets
// it. The one-leaf search pages rail-0 leaves and these (graphsvc.ingest.fabric_plan.home_leaves
// says why): until this step, a host whose rail-0 NIC has
// no cable was under no leaf it paged. Fabric imports write the flag from now on. Sets true only,
// so running it again changes nothing. Idempotent.
// @write
// @row leaves int
MATCH (h:Host)-[:HAS_NIC]->(:NIC)-[:UPLINK]->(s:Switch)
WHERE s.tier = 'leaf'
WITH h, s.cluster AS cluster, collect(DISTINCT s) AS cabled
WITH reduce(first = head(cabled), l IN cabled |
            CASE WHEN coalesce(l.rail, 0) < coalesce(first.rail, 0)
                   OR (coalesce(l.rail, 0) = coalesce(first.rail, 0) AND l.name < first.name) THEN l ELSE first END) AS first
WITH DISTINCT first
SET first.home_leaf = true
RETURN count(first) AS leaves
