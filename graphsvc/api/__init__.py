"""HTTP surface of the service: REST ingest, health, and (later) GraphQL."""
