"""Placement: where can this job run well. Cypher finds candidates; Python checks and scores them."""
