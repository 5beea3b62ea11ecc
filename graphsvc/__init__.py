"""Topology knowledge-graph service: where can this job run well."""

__version__ = "0.1.0"
