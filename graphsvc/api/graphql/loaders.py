"""Dataloaders for one GraphQL request: each part of a host is read once for every host asked.

Several aliased `host` fields cost one `host_detail` query, and asking them for NICs one
`host_layout` and one `host_gpu_nics` query in all, not one per host; a part nobody asks for
is never read.
"""

from __future__ import annotations

from strawberry.dataloader import DataLoader

from graphsvc.read.browse import Browse, LocatedGpu
from graphsvc.read.hosts import HostHeader, HostLayout, HostReader, HostSlice, NicAffinity, NVLinkEdge


class Loaders:
    def __init__(self, reader: HostReader, browse: Browse) -> None:
        async def gpus(uuids: list[str]) -> list[LocatedGpu | None]:
            found = {n.gpu.uuid: n for n in await browse.gpus_by_uuid(uuids)}
            return [found.get(u) for u in uuids]

        async def headers(names: list[str]) -> list[HostHeader | None]:
            found = await reader.headers(names)
            return [found.get(n) for n in names]

        async def layouts(names: list[str]) -> list[HostLayout]:
            found = await reader.layouts(names)
            return [found[n] for n in names]

        async def nvlinks(names: list[str]) -> list[list[NVLinkEdge]]:
            found = await reader.nvlinks(names)
            return [found[n] for n in names]

        async def affinities(names: list[str]) -> list[list[NicAffinity]]:
            found = await reader.affinities(names)
            return [found[n] for n in names]

        async def mig_slices(names: list[str]) -> list[list[HostSlice]]:
            found = await reader.mig_slices(names)
            return [found[n] for n in names]

        self.header = DataLoader(load_fn=headers)
        self.gpu = DataLoader(load_fn=gpus)  # a GPU's live readings, by uuid (a reservation's GPUs)
        self.mig_slices = DataLoader(load_fn=mig_slices)
        self.layout = DataLoader(load_fn=layouts)
        self.nvlinks = DataLoader(load_fn=nvlinks)
        self.affinity = DataLoader(load_fn=affinities)
