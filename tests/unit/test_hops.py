"""Hops between hosts (placement.model.hops) and the fabric path the API reports (read.browse)."""

from __future__ import annotations

from graphsvc.placement.model import Host, hops
from graphsvc.read.browse import path_between


def test_hosts_of_two_clusters_are_no_known_hops_apart() -> None:
    """Two clusters' fabrics share no switch: no path, whatever their pods (a probe's case)."""
    a = Host("a", None, "A", ["L0"], "pod:s0", None, [], cluster="east")
    b = Host("b", None, "B", ["L9"], "pod:s9", None, [], cluster="west")
    assert hops(a, b) is None and hops(a, Host("c", None, "A", ["L0"], "pod:s0", None, [], cluster="east")) == 1
    nic = {"nic": "mlx5_0", "rate_gbps": 400, "leaf": "L0", "leaf_uplink_gbps": 800}
    rows = [{"host": h.name, "leaves": h.leaves, "pod": h.pod, "cluster": h.cluster, "nics": [nic]} for h in (a, b)]
    path = path_between("a", "b", rows[0], rows[1])
    assert (path.hops, path.bottleneck_gbps) == (None, None)  # it said 5 hops at 50 GB/s
