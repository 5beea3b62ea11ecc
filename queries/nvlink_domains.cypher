// NVLink domains with their member count, largest first.
// @read
// @row uuid string, kind string?, members int
MATCH (d:NVLinkDomain)
OPTIONAL MATCH (d)<-[:IN_DOMAIN]-(g:GPU)
WITH d, count(g) AS members
RETURN d.uuid AS uuid, d.kind AS kind, members
ORDER BY members DESC, uuid
