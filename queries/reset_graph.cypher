// Deletes every node and relationship: tests and `graphsvc reset` only.
MATCH (n)
DETACH DELETE n
