"""The `sites` export: every site with its clusters, capacity kinds, GPUs and links, as JSON.

For a federation layer above per-cluster schedulers (MultiKueue, Armada, a team's own
dispatcher) that must know which clusters are one site and how far apart the sites are.
"""

from __future__ import annotations

import json

from graphsvc.sites.service import sites_overview
from graphsvc.sites.store import site_links
from graphsvc.store.gateway import Gateway


async def sites_json(gw: Gateway, annotations: dict[str, str]) -> str:
    sites, counts = await sites_overview(gw)
    doc = {
        "kind": "SiteCatalog",
        "annotations": annotations,
        "sites": [
            {
                "name": s.name,
                "kind": s.kind.value,
                "provider": s.provider,
                "region": s.region,
                "location": s.location,
                "parent": s.parent,
                "capacityKinds": [k.value for k in s.capacity_kinds],
                "spotPreemptionPerHour": s.spot_preemption_per_h,
                "clusters": list(s.clusters),
                "gpus": [{"model": m, "gpus": n, "free": f} for m, n, f in counts.get(s.name, [])],
            }
            for s in sites
        ],
        "links": [
            {"a": x.a, "b": x.b, "bandwidthGBps": x.bandwidth_gbps, "latencyMs": x.latency_ms}
            for x in await site_links(gw)
        ],
    }
    return json.dumps(doc, indent=2) + "\n"
