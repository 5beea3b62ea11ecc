// Removes NVLink domains (of the given uuids) that no GPU belongs to any more.
// @write
// @param uuids list<string>
// @row pruned int
MATCH (d:NVLinkDomain)
WHERE d.uuid IN $uuids
OPTIONAL MATCH (d)<-[m:IN_DOMAIN]-(:GPU)
WITH d, count(m) AS members
WHERE members = 0
DETACH DELETE d
RETURN count(*) AS pruned
