"""A diagnosis's probe pages leaves fullest first where its budget reads them all
(`_Search.reads_every_leaf`, placement_leaf_total), and fewest first, as `place` does, where the
budget may stop it part-way (issue #15, Deliver 3; docs/benchmarks.md, "Stop 68"). At 8k GPUs the
probe of `248xH100 per-host=8 rail-aligned` paged 19 leaves fewest first, in six statements, to
reach the fullest, which held it. Both stores; the oracle that a probe answers as `place` does,
budgets included, is tests/unit/test_rail_probes.py."""

from __future__ import annotations

from typing import Any

import pytest

from graphsvc.placement import engine as engine_module
from graphsvc.placement.engine import PlacementEngine, SearchBudget
from graphsvc.placement.request import parse_request
from graphsvc.store.gateway import Gateway
from graphsvc.synthetic.clusters import SyntheticCluster
from tests.cluster_helpers import load
from tests.unit.test_rail_probes import healthy, units

PROBE = "248xH100 per-host=8 rail-aligned"


def _fullest_unit_fits() -> SyntheticCluster:
    """Four units. Units 1-3 lack their host n32 (248 free GPUs each) and have two hosts with a
    degraded GPU: 29 hosts hold 8, no window for 31 x 8. Unit 4 is whole and healthy (256 free)
    and holds it: the last leaf fewest first, the first fullest first."""
    cluster = units(4, 32, seed=7)
    dropped = {f"h100-su{su}-n32" for su in (1, 2, 3)}
    cluster.hosts = [h for h in cluster.hosts if h.hostname not in dropped]
    cluster.nic_uplinks = [u for u in cluster.nic_uplinks if u.host not in dropped]
    healthy(cluster, {f"h100-su{su}-n{n:02d}" for su in (1, 2, 3) for n in (5, 9)})
    return cluster


def _leaf_pages(gateway: Gateway, mp: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """The parameters of every leaf page the gateway runs from now on (either form)."""
    pages: list[dict[str, Any]] = []
    read = gateway.read

    async def recording(name: str, params: Any = None) -> Any:
        if name.startswith("placement_leaves_fit"):
            pages.append(dict(params or {}))
        return await read(name, params)

    mp.setattr(gateway, "read", recording)
    return pages


async def test_a_probe_whose_budget_reads_every_leaf_pages_the_fullest_first(gateway: Gateway) -> None:
    """The fitting unit is the fullest: one leaf page of one leaf (fewest first: three statements
    in growing parts, the fitting leaf last), and the probe says what `place` finds."""
    await load(gateway, _fullest_unit_fits())
    engine = PlacementEngine(gateway)
    req = parse_request(PROBE).validated()
    with pytest.MonkeyPatch.context() as mp:
        pages = _leaf_pages(gateway, mp)
        assert await engine.fits(req)
    assert [(p["fullest_leaves"], p["skip"], p["limit"]) for p in pages] == [(True, 0, 1)]
    assert (await engine.place(req, explain_infeasible=False)).candidates
    with pytest.MonkeyPatch.context() as mp:  # the order before: fewest first
        mp.setattr(engine_module._Search, "reads_every_leaf", _never)
        pages = _leaf_pages(gateway, mp)
        assert await PlacementEngine(gateway).fits(req)
    assert [(p["fullest_leaves"], p["skip"]) for p in pages] == [(False, 0), (False, 1), (False, 3)]


async def test_a_probe_the_budget_may_stop_keeps_the_placements_order(gateway: Gateway) -> None:
    """A budget of 3 units stops `place` after the three emptiest leaves (one page: `limit` 1
    and two more), none of which holds 31 x 8 (one IB hop: no wider search): it finds nothing, and so must the probe,
    which therefore pages fewest first too. Paged fullest first it would read the fitting unit
    first and answer "fits"."""
    await load(gateway, _fullest_unit_fits())
    budget = SearchBudget(units=3, page=256)
    req = parse_request(f"{PROBE} ib-hops<=1").with_(limit=1).validated()
    assert not (await PlacementEngine(gateway, budget=budget).place(req, explain_infeasible=False)).candidates
    with pytest.MonkeyPatch.context() as mp:
        pages = _leaf_pages(gateway, mp)
        assert not await PlacementEngine(gateway, budget=budget).fits(req)
    assert pages and not any(p["fullest_leaves"] for p in pages)
    with pytest.MonkeyPatch.context() as mp:  # without the budget check the answers part
        mp.setattr(engine_module._Search, "reads_every_leaf", _always)
        assert await PlacementEngine(gateway, budget=budget).fits(req)


async def _never(self: Any, min_free: int) -> bool:
    return False


async def _always(self: Any, min_free: int) -> bool:
    return True
