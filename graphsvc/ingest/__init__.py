"""Turning validated host and fabric facts into the graph, atomically."""
