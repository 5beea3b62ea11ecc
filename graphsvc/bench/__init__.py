"""Benchmarks that drive the service: trace replay against scheduler baselines."""
