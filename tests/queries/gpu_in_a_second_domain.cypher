// Test only: a graph a collector should never send, one GPU in two NVLink domains (its own and a
// new one-member domain), so that one host's GPU shows in two of the reserve batch's groups.
// @write
// @param domain string
// @param uuid string
// @row domain string
MATCH (g:GPU {uuid: $uuid})
CREATE (d:NVLinkDomain {uuid: $domain, kind: 'nvswitch', size: 1, free_gpus: 1, gpu_model: g.model, tie_bucket: 1})
CREATE (g)-[:IN_DOMAIN]->(d)
RETURN d.uuid AS domain
