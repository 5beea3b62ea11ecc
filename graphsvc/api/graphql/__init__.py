"""GraphQL API: browsing the topology and asking for placements."""
