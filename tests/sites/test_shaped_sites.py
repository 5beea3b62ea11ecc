"""Shaped jobs (tp/pp/dp) never span sites, nor clusters, even at the widest (cluster) level."""

from __future__ import annotations

import time

from graphsvc.placement.shape import parse_shape
from graphsvc.placement.shaped_service import place_shaped
from graphsvc.sites.catalog import SiteCatalog
from graphsvc.sites.store import put_sites
from graphsvc.store.gateway import Gateway
from tests.sites.test_sites_placement import TWO_SITES, _two_sites


async def test_a_shaped_job_stays_in_one_site(gateway: Gateway) -> None:
    await _two_sites(gateway, catalog=False)
    shape = parse_shape("tp=8 pp=1 dp=3 model=H100 job-in=cluster")  # 24 GPUs: more than one site's 16
    # Without sites too: two clusters are two fabrics (no cable joins them), never one pool.
    assert (await place_shaped(gateway, shape)).placement is None
    assert (await place_shaped(gateway, parse_shape("tp=8 pp=1 dp=2 model=H100 job-in=cluster"))).placement
    await put_sites(gateway, SiteCatalog.model_validate(TWO_SITES), time.time())
    assert (await place_shaped(gateway, shape)).placement is None
    two = await place_shaped(gateway, parse_shape("tp=8 pp=1 dp=2 model=H100 job-in=cluster"))
    assert two.placement is not None
    hosts = {r.host for r in two.placement.ranks}
    assert {h[0] for h in hosts} in ({"a"}, {"b"})
