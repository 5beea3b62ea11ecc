"""Synthetic clusters from NVIDIA reference architectures, fed through the real ingest path."""
