"""The multi-site demo: an on-prem DGX H100 SuperPOD and two cloud regions of other GPU kinds.

* ``onprem-dc1`` (on-prem, owned): one DGX H100 SuperPOD scalable unit, 31 nodes, 248 GPUs.
* ``aws-us-east-1`` (cloud region, on-demand and spot): 12 p5.48xlarge-like hosts (8x H100,
  8x 400 Gb/s), 96 GPUs, one leaf per rail.
* ``neocloud-se1`` (cloud region, on-demand and reserved): one GB200 NVL72 rack, 72 GPUs.

Each site has its own cluster (and fabric); `catalog()` is the site catalogue (`PUT /v1/sites`)
and the example price file (graphsvc/sites/data/example-prices.toml) prices all three.
"""

from __future__ import annotations

from topo_facts import FabricSwitch, SwitchTier

from graphsvc.sites.catalog import SiteCatalog, SiteIn, SiteLinkIn
from graphsvc.sites.model import CapacityKind, SiteKind
from graphsvc.synthetic.clusters import (
    SyntheticCluster,
    _cable_hosts,
    _seed,
    add_nvl72,
    add_spines,
    add_superpod_h100,
)
from graphsvc.synthetic.hosts import HostSpec, dgx_h100

ONPREM, AWS, NEOCLOUD = "onprem-dc1", "aws-us-east-1", "neocloud-se1"
CLUSTERS = {ONPREM: "dc1-superpod", AWS: "aws-use1-p5", NEOCLOUD: "se1-gb200"}


def clusters(seed: int = 7, aws_hosts: int = 12) -> list[SyntheticCluster]:
    onprem = SyntheticCluster(CLUSTERS[ONPREM])
    leaves = add_superpod_h100(onprem, 1, seed=seed, prefix="dc1")
    add_spines(onprem, leaves, prefix="dc1", sus=1)

    aws = SyntheticCluster(CLUSTERS[AWS])
    hosts = [
        dgx_h100(
            HostSpec(
                f"use1-p5-{n:03d}",
                aws.name,
                f"use1-r{(n - 1) // 4 + 1:02d}",
                "use1-spine-block",
                _seed(seed, f"use1-p5-{n:03d}"),
            )
        )
        for n in range(1, aws_hosts + 1)
    ]
    rails: dict[int, list[str]] = {}
    for rail in range(8):
        leaf = f"use1-leaf-r{rail}"
        aws.switches.append(FabricSwitch(name=leaf, tier=SwitchTier.LEAF, scalable_unit="use1", rail=rail, model="EFA"))
        rails[rail] = [leaf]
    aws.hosts.extend(hosts)
    _cable_hosts(aws, hosts, rails)
    add_spines(aws, [leaf for group in rails.values() for leaf in group], prefix="use1", sus=1)

    neo = SyntheticCluster(CLUSTERS[NEOCLOUD])
    leaves = add_nvl72(neo, 1, seed=seed, prefix="se1")
    add_spines(neo, leaves, prefix="se1", sus=1)
    return [onprem, aws, neo]


def catalog() -> SiteCatalog:
    """The three sites, what capacity each sells, and the links between them."""
    return SiteCatalog(
        sites=[
            SiteIn(
                name=ONPREM,
                kind=SiteKind.ON_PREM,
                provider="own",
                location="Frankfurt, DE",
                capacity_kinds=[CapacityKind.OWNED],
                clusters=[CLUSTERS[ONPREM]],
            ),
            SiteIn(
                name=AWS,
                kind=SiteKind.CLOUD_REGION,
                provider="aws",
                region="us-east-1",
                location="Virginia, US",
                capacity_kinds=[CapacityKind.ON_DEMAND, CapacityKind.SPOT],
                spot_preemption_per_h=0.05,
                clusters=[CLUSTERS[AWS]],
            ),
            SiteIn(
                name=NEOCLOUD,
                kind=SiteKind.CLOUD_REGION,
                provider="example neocloud",
                region="se1",
                location="Sweden",
                capacity_kinds=[CapacityKind.ON_DEMAND, CapacityKind.RESERVED],
                clusters=[CLUSTERS[NEOCLOUD]],
            ),
        ],
        links=[
            # 100 Gb/s Direct Connect to Virginia; 100 Gb/s wave to Sweden; 200 Gb/s between the clouds.
            SiteLinkIn(a=ONPREM, b=AWS, bandwidth_gbps=12.5, latency_ms=90.0),
            SiteLinkIn(a=ONPREM, b=NEOCLOUD, bandwidth_gbps=12.5, latency_ms=25.0),
            SiteLinkIn(a=AWS, b=NEOCLOUD, bandwidth_gbps=25.0, latency_ms=100.0),
        ],
    )


async def push_sites(url: str, token: str | None) -> None:
    """PUT the site catalogue and the example price file to a running service (the demo's last step)."""
    import httpx

    from graphsvc.sites.catalog import EXAMPLE_PRICES, load_price_file

    headers = {"authorization": f"Bearer {token}"} if token else {}
    prices = load_price_file(EXAMPLE_PRICES).model_dump(mode="json", by_alias=True, exclude_none=True)
    async with httpx.AsyncClient(base_url=url, timeout=120, headers=headers) as client:
        for path, body in (("/v1/sites", catalog().model_dump(mode="json")), ("/v1/prices", prices)):
            resp = await client.put(path, json=body)
            if resp.status_code != 200:
                raise RuntimeError(f"{path}: HTTP {resp.status_code}: {resp.text[:500]}")
