"""Loading a synthetic cluster into a store through the real ingest path.

The demo, the benchmarks and the tests all load clusters this way: each host document through
`ingest_host` (the statement a collector's push runs), then the cluster's fabric, so what they
measure or assert is what a real cluster's collectors would have written.
"""

from __future__ import annotations

from graphsvc.ingest.service import ingest_fabric, ingest_host
from graphsvc.store.gateway import Gateway
from graphsvc.synthetic.clusters import SyntheticCluster, build


async def load_cluster(gw: Gateway, profile: str | SyntheticCluster) -> SyntheticCluster:
    """Ingest every host of `profile` (a profile name such as `sized:gpus=8192`, or a built
    cluster), one at a time, then its fabric if it has switches."""
    cluster = build(profile) if isinstance(profile, str) else profile
    for host in cluster.hosts:
        await ingest_host(gw, host)
    if cluster.switches:
        await ingest_fabric(gw, cluster.fabric())
    return cluster
