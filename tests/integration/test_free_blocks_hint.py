"""The free-blocks fragment's probe start is a hint: any hint gives the same blocks.

`placement_free_blocks` probes free counts down from `$host_top` / `$domain_top`, which the
engine sets to the largest counts it has seen (`BlockTops`). A unit that has since grown past
the hint must still be found, so every hint, too low, exact or too high, must answer the
largest free hosts and NVLink domains exactly as the plain ordered queries do.
"""

from __future__ import annotations

import random
from typing import Any

from graphsvc.placement.engine import BlockTops, PlacementEngine
from graphsvc.placement.request import parse_request
from graphsvc.store.gateway import Gateway
from graphsvc.store.schema import TIE_BUCKETS
from tests.cluster_helpers import load, occupy
from tests.helpers import DEFAULT_GPU_FILTERS


def fit_params(host_top: int, domain_top: int, blocks: int) -> dict[str, Any]:
    return {
        "exclude": [],
        "filters": DEFAULT_GPU_FILTERS,
        "now": 1.0,
        "stale_before": 0.0,
        "virtual_free": [],
        "blocks": blocks,
        "host_top": host_top,
        "domain_top": domain_top,
        "first_size": 1,
        "last_size": 128,
        "step": 1,
        "mode": "none",
        "model": "",
        "prefilter_models": [],
        "known": [""],
        "n": 1,
        "skip": 0,
        "limit": 3,
        "probe": 3,
        "tie_buckets": TIE_BUCKETS,
    }


async def test_every_hint_gives_the_largest_free_blocks(gateway: Gateway) -> None:
    await load(gateway, "nvl72")  # one 72-GPU NVLink domain over 18 trays of 4
    cluster = await load(gateway, "superpod-h100:sus=1")  # 31 hosts, a domain of 8 each
    rng = random.Random(5)
    await occupy(gateway, [g.uuid for h in cluster.hosts for g in h.gpus if rng.random() < 0.6])
    for blocks in (1, 4, 9):
        hosts = [
            {"unit": r["unit"], "free": r["free"]}
            for r in await gateway.read("largest_free_hosts", {"top": 128, "limit": blocks})
        ]
        domains = [
            {"unit": r["unit"], "free": r["free"]}
            for r in await gateway.read("largest_free_domains", {"top": 576, "limit": blocks})
        ]
        largest = domains[0]["free"]
        assert hosts and largest > 8  # the NVL72 domain, most of it free
        for host_top, domain_top in ((0, 0), (1, 1), (3, 5), (8, 8), (8, largest - 1), (8, largest), (128, 576)):
            rows = await gateway.read("placement_hosts_fit", fit_params(host_top, domain_top, blocks))
            assert [b for b in rows[0]["host_blocks"] if b] == hosts, (blocks, host_top)
            assert [b for b in rows[0]["domain_blocks"] if b] == domains, (blocks, domain_top)


async def test_the_engine_keeps_the_largest_counts_it_saw(gateway: Gateway) -> None:
    await load(gateway, "superpod-h100:sus=1")
    engine = PlacementEngine(gateway)
    assert engine.block_tops.params() == {"host_top": 128, "domain_top": 576}  # nothing read yet
    await engine.place(parse_request("4xH100 nvlink=full-mesh"))
    assert engine.block_tops.params() == {"host_top": 8, "domain_top": 8}


def test_a_hint_is_never_lowered() -> None:
    tops = BlockTops()
    tops.saw([{"unit": "a", "free": 8}], [{"unit": "d", "free": 72}])
    tops.saw([{"unit": "a", "free": 2}, None], [])  # type: ignore[list-item]
    assert tops.params() == {"host_top": 8, "domain_top": 72}
