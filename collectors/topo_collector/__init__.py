"""Discovers a GPU host's topology (NVML, sysfs) and keeps the topology service current."""

__version__ = "0.1.0"
