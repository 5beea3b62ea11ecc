"""The text form's options with their help, importable without the placement model: the CLI
prints them in `graphsvc place --help` without importing pydantic (graphsvc/cli.py)."""

from __future__ import annotations

# Every option the text form knows, as its help names it (for "did you mean" and the help).
OPTIONS = {
    "nvlink=": "none, any or full-mesh: NVLink between every pair of chosen GPUs",
    "scale-up=": "the same as nvlink=, for any vendor's scale-up link (xgmi= too)",
    "per-host=": "GPUs per host (a gang split evenly)",
    "ib-hops<=": "at most this many InfiniBand switch hops between chosen hosts",
    "mem>=": "at least this much GPU memory, GiB (e.g. mem>=80)",
    "temp<=": "GPUs no hotter than this, °C",
    "model=": "GPU model (also 8xH100)",
    "exclude=": "hosts to avoid, comma-separated",
    "prefer=": "hosts to prefer, comma-separated",
    "packing=": "best-fit (default: fill partly used hosts) or spread",
    "limit=": "how many candidates to return (default 3)",
    "site=": "only these sites, comma-separated (docs/sites.md)",
    "cross-site": "allow one placement to span sites (the inter-site link becomes its bottleneck)",
    "same-domain": "all GPUs in one NVLink domain (e.g. one NVL72 rack)",
    "rail-aligned": "each GPU's NIC on the same rail across hosts",
    "gpu-nic-affinity": "each GPU with a NIC on its own PCIe switch or NUMA node",
    "allow-unhealthy": "also consider degraded GPUs (a failed GPU is never offered)",
    "no-prefer-cool": "do not prefer cooler GPUs on ties",
    "exclusive": "the job needs its GPUs to itself: GPUs busy outside reservations (>= 10% utilised) are not free",
    "cc>=": "NVIDIA compute capability at least this (e.g. cc>=9.0)",
    "mem-bw>=": "GPU memory bandwidth at least this many GB/s (e.g. mem-bw>=3000)",
    "fp8": "GPUs with FP8 tensor/matrix cores (Hopper, Ada, Blackwell, CDNA3+)",
    "fp4": "GPUs with FP4 tensor/matrix cores (Blackwell, CDNA4)",
    "link-gen>=": "scale-up link (NVLink/xGMI) generation at least this (e.g. link-gen>=5)",
}
