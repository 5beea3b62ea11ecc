// Deletes every node and relationship. Tests only: it stays in the production registry because
// tests/conftest.py (frozen for this change) resets FalkorDB graphs with it; move it to
// tests/queries/ together with that call.
// @write
MATCH (n)
DETACH DELETE n
