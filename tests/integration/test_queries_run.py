"""Every named query runs on the real embedded store with realistic parameters.

The lint test proves Neo4j accepts each query; this proves FalkorDB runs it.
A new query without an entry in EXAMPLES fails here, on purpose.
"""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

from topo_facts import MigSliceFact

from graphsvc.ingest.host_plan import host_params
from graphsvc.ingest.service import ingest_fabric, ingest_host
from graphsvc.store.gateway import Gateway
from graphsvc.store.queries import default_registry
from graphsvc.store.schema import TIE_BUCKETS
from graphsvc.synthetic.clusters import build
from tests.helpers import DEFAULT_GPU_FILTERS
from tests.queries import registry_with_tests, with_test_queries

CLUSTER = build("demo:sus=1,nvl72_racks=1,a100_hosts=2,l40s_hosts=2")
FIRST = CLUSTER.hosts[0]


def _in_host_example(rid: str) -> dict[str, object]:
    """Parameters of a one-request reserve (either statement): 2 GPUs, full mesh, id `rid`."""
    return {
        "first_size": 1,
        "last_size": 128,
        "exclude": [],
        "model": "h100",
        "models": sorted({g.model for g in FIRST.gpus}),
        "mode": "full-mesh",
        "n": 2,
        "k": 8,
        "scan": 64,
        "slot": 3,
        "now": time.time(),
        "stale_before": 0.0,
        "props": {
            "id": rid,
            "holder": "t",
            "state": "active",
            "created_at": 1.0,
            "expires_at": 2.0,
            "gpu_count": 2,
            "idempotency_key": rid,
        },
    }


def _batch_example(prefix: str) -> dict[str, object]:
    """Parameters of a batch reserve (either statement): three requests, ids from `prefix`."""
    return {
        "now": time.time(),
        "sizes": [1],
        "models": sorted({g.model for g in FIRST.gpus}),
        "model": "",
        "exclude": [],
        "stale_before": 0.0,
        "scan": 11,
        "requests": [
            {
                "n": n,
                "link": link,
                "props": {
                    "id": f"{prefix}-{n}",
                    "holder": "t",
                    "state": "active",
                    "created_at": 1.0,
                    "expires_at": 2.0,
                    "gpu_count": n,
                    "idempotency_key": f"{prefix}-{n}",
                },
            }
            for n, link in [(1, 0), (2, 2), (4, 1)]
        ],
    }


# A second host with GPU 0 in MIG mode (two 3g.40gb slices), so the MIG queries return rows.
_MIG_GPU = CLUSTER.hosts[1].gpus[0]
MIG_SLICES = [f"MIG-example-{n}" for n in range(2)]
MIG_HOST = CLUSTER.hosts[1].model_copy(
    update={
        "collected_at": CLUSTER.hosts[1].collected_at + timedelta(seconds=1),
        "gpus": [
            _MIG_GPU.model_copy(
                update={
                    "mig_mode": True,
                    "mig_slices": [
                        MigSliceFact(uuid=u, gpu_instance_id=n + 1, profile="3g.40gb", memory_mib=40448)
                        for n, u in enumerate(MIG_SLICES)
                    ],
                }
            ),
            *CLUSTER.hosts[1].gpus[1:],
        ],
    }
)

# What every one-statement placement query takes besides its sizes and page (engine.fit_params).
FIT: dict[str, Any] = {
    "exclude": [],
    "filters": DEFAULT_GPU_FILTERS,
    "now": time.time(),
    "stale_before": 0.0,
    "virtual_free": [],
    "blocks": 5,
    "host_top": 128,
    "domain_top": 576,
    "tie_buckets": TIE_BUCKETS,
    "prefilter_models": [FIRST.gpus[0].model],
    "known": [FIRST.gpus[0].model, ""],
}

BLOCKS_PARAMS = ("blocks", "host_top", "domain_top", "tie_buckets")  # the free blocks' (placement_cluster_blocks)

# What the diagnosis's count statements take (graphsvc/placement/counting.py).
COUNT_PARAMS: dict[str, Any] = {
    "exclude": [],
    "filters": FIT["filters"],
    "known": [FIRST.gpus[0].model],
    "model": "",
    "models": [FIRST.gpus[0].model],
    "now": 1.0,
    "stale_before": 0.0,
}


EXAMPLES: dict[str, dict[str, Any]] = {
    "meta_version": {},
    "meta_set_version": {"version": 2, "now": 0.0},
    "graph_is_empty": {},
    "health_counts": {},
    "placement_gpu_models": {},
    "placement_leaf_holds": {"n": 2, "share": 0},
    "placement_leaf_nics": {"least_leaf": 1},
    "placement_leaf_shares": {"least_leaf": 1},
    "placement_nics_off_leaf": {},
    "reset_graph": {},
    "shaped_candidate_hosts": {"model": "h100", "exclude": [], "limit": 10},
    "impact_holdings": {"now": time.time()},
    "impact_hosts": {},
    "impact_switches": {},
    "stale_hosts_count": {"cutoff": time.time()},
    "host_detail": {"hosts": [FIRST.hostname, "no-such-host"]},
    "host_domains": {"host": FIRST.hostname},
    "host_racks": {"name": FIRST.hostname},
    "ingest_host": host_params(FIRST, received_at=time.time()),
    "ingest_host_blockers": {"host": FIRST.hostname, "gpu_uuids": [g.uuid for g in FIRST.gpus], "slice_uuids": []},
    "ingest_fabric": {
        "cluster": "default",
        "nic_uuids": [],
        "switch_names": [],
        "switches": [],
        "nic_uplinks": [],
        "switch_uplinks": [],
        "host_fabric": [],
    },
    "missing_nics": {"nic_uuids": ["nope/nic/x"]},
    "fabric_nics_elsewhere": {"cluster": "other", "nic_uuids": ["nope/nic/x"]},
    "fabric_switches_taken": {"cluster": "c", "switch_names": ["nope"]},
    "prune_nvlink_domains": {"uuids": ["nope"]},
    "nvlink_domains": {},
    "gpus_by_uuid": {"uuids": [FIRST.gpus[0].uuid]},
    "export_nodes": {"limit": 10},
    "export_relationships": {"limit": 10},
    "migrations/0002_1_gpu_state_default": {},
    "migrations/0003_1_host_counters": {},
    "migrations/0003_2_domain_counters": {},
    "migrations/0003_3_leaf_counters": {},
    "migrations/0004_1_mig_slices": {},
    "migrations/0005_1_domain_tie_buckets": {},
    "migrations/0005_2_host_tie_buckets": {},
    "migrations/0006_1_domain_tie_buckets_from_one": {},
    "migrations/0006_2_host_tie_buckets_from_one": {},
    "migrations/0007_1_home_leaves": {},
    "migrations/0008_1_host_spines_cores": {},
    "migrations/0008_2_fabric_domains_in_cluster": {},
    "migrations/0009_1_host_impaired": {},
    "host_impaired_counts": {"hosts": [FIRST.hostname]},
    "host_impaired_set": {"hosts": ["no-such-host"], "value": None},
    "gpu_fail": {"uuid": "no-such-gpu"},
    "gpu_health_raw": {"uuid": "no-such-gpu", "health": "ok"},
    "graph_nodes": {},
    "graph_edges": {},
    "clusters": {},
    "update_gpu_metrics": {
        "host": FIRST.hostname,
        "collected_at": time.time() + 1,
        "props": {"metrics_at": time.time() + 1, "received_at": time.time()},
        "readings": {FIRST.gpus[0].uuid: {"temperature_c": 50.0}},
    },
    "ingest_host_unchanged": {
        "host": FIRST.hostname,
        "fingerprint": "not-the-stored-one",
        "props": {"collected_at": time.time() + 2, "received_at": time.time()},
        "readings": {FIRST.gpus[0].uuid: {"temperature_c": 51.0, "health": "ok"}},
    },
    "ingest_hosts_unchanged": {
        "docs": [
            {
                "host": FIRST.hostname,
                "fingerprint": "not-the-stored-one",
                "props": {"collected_at": time.time() + 2, "received_at": time.time()},
                "readings": {FIRST.gpus[0].uuid: {"temperature_c": 51.0, "health": "ok"}},
            }
        ]
    },
    "host_freshness": {"host": FIRST.hostname},
    "host_reset_freshness": {"host": FIRST.hostname},
    "remove_host": {"name": CLUSTER.hosts[-1].hostname, "now": time.time()},
    "reservation_request_hash": {"key": "k-1"},
    "host_gpu_nics": {"hosts": [FIRST.hostname]},
    "recount_hosts": {"hosts": [FIRST.hostname]},
    "recount_domains": {"uuids": [f"{FIRST.hostname}/nvlink/0"]},
    "recount_leaves": {"names": ["h100-su1-leaf-r0"]},
    "placement_hosts_by_free": {
        "first_size": 8,
        "last_size": 7,
        "step": -1,
        "exclude": [],
        "model": "h100",
        "limit": 5,
    },
    "placement_domains_fit": {
        **FIT,
        "first_size": 72,
        "last_size": 576,
        "step": 1,
        "model": "gb200",
        "n": 72,
        "skip": 0,
        "limit": 2,
        "probe": 2,
    },
    "placement_hosts_fit": {
        **FIT,
        "first_size": 8,
        "last_size": 7,
        "step": -1,
        "mode": "none",
        "model": "h100",
        "n": 4,
        "skip": 0,
        "limit": 5,
        "probe": 5,
    },
    "placement_hosts_fit_each_model": {
        **{k: v for k, v in FIT.items() if k in default_registry()["placement_hosts_fit_each_model"].parameters},
        "first_size": 4,
        "last_size": 128,
        "mode": "domain",
        "model": "",
        "n": 4,
        "limit": 5,
        "each": [
            {"model": "h100", "prefilter_models": [FIRST.gpus[0].model]},
            {"model": "b200", "prefilter_models": []},
        ],
    },
    "placement_domains_fit_each_model": {
        **{k: v for k, v in FIT.items() if k in default_registry()["placement_domains_fit_each_model"].parameters},
        "first_size": 8,
        "last_size": 576,
        "step": 1,
        "model": "",
        "n": 8,
        "limit": 5,
        "each": [
            {"model": "h100", "prefilter_models": [FIRST.gpus[0].model]},
            {"model": "gb200", "prefilter_models": []},
        ],
    },
    "placement_cluster_blocks": {k: FIT[k] for k in BLOCKS_PARAMS},
    "placement_leaves_fit": {
        **{k: v for k, v in FIT.items() if k not in BLOCKS_PARAMS},
        "ready": True,
        "min_free": 16,
        "gpus": 16,
        "per_host": 0,
        "host_min": 1,
        "need": 16,
        "extra": 2,
        "fullest_first": True,
        "fullest_leaves": True,
        "even": True,
        "model": "h100",
        "skip": 0,
        "limit": 2,
    },
    "placement_leaf_total": {"min_free": 16, "fullest_leaves": False, "skip": 0, "limit": 5},
    "placement_host_gpus": {"hosts": [FIRST.hostname]},
    "placement_host_positions": {"hosts": [FIRST.hostname]},
    "placement_host_topology": {"hosts": [FIRST.hostname, "no-such-host"]},
    "placement_host_nvlinks": {"hosts": [FIRST.hostname]},
    "largest_free_hosts": {"top": 8, "limit": 3},
    "placement_free_bounds": {"share": 4},
    "placement_wide_counts": {**COUNT_PARAMS, "least": 1},
    "placement_leaf_counts": {**COUNT_PARAMS, "least": 1, "least_leaf": 1},
    "placement_fullest_pool": {k: v for k, v in COUNT_PARAMS.items() if k != "known"} | {"cover": 4},
    "benchmark_naive_scan": {"model": "h100", "n": 4, "limit": 6},
    "cluster_summary": {},
    "domain_summary": {},
    "hosts_page": {
        "after": "",
        "cluster": "",
        "rack": "",
        "scalable_unit": "",
        "model": "",
        "min_free": 0,
        "stale_before": 0.0,
        "first": 5,
    },
    "gpus_page": {"after": "", "model": "", "state": "", "health": "", "host": "", "min_memory_mib": 0, "first": 5},
    "host_nvlink_edges": {"hosts": [FIRST.hostname]},
    "host_layout": {"hosts": [FIRST.hostname]},
    "fabric_switches": {"cluster": "default", "tier": "", "after": "", "first": 5},
    "host_fabric_position": {"hosts": [FIRST.hostname]},
    "set_gpu_state": {"uuids": [FIRST.gpus[0].uuid], "state": "free"},
    "stale_host_names": {"cutoff": time.time(), "limit": 10},
    "reservations/reserve_gpus": {
        "uuids": [FIRST.gpus[1].uuid],
        "now": time.time(),
        "props": {
            "id": "rsv-example",
            "holder": "t",
            "state": "active",
            "created_at": 1.0,
            "expires_at": 2.0,
            "gpu_count": 1,
            "idempotency_key": "rsv-example",
        },
    },
    "reservations/reserve_in_host": _in_host_example("rsv-in-host"),
    "reservations/reserve_in_host_scan": _in_host_example("rsv-in-host-scan"),
    "reservations/reserve_in_host_batch": _batch_example("rsv-batch"),
    "reservations/reserve_in_host_batch_scan": _batch_example("rsv-batch-scan"),
    # Runs after the two above (writes run in name order): ends two of each one's reservations.
    "reservations/reserve_release_batch": {
        **_batch_example("rsv-both"),
        "ids": ["rsv-batch-1", "rsv-batch-2", "rsv-none"],
        "state": "released",
    },
    "reservations/reserve_release_batch_scan": {
        **_batch_example("rsv-both-scan"),
        "ids": ["rsv-batch-scan-1", "rsv-batch-scan-2"],
        "state": "released",
    },
    "reservations/host_count": {},
    "reservations/release_reservation": {"id": "rsv-example", "now": 3.0, "state": "released"},
    "reservations/release_batch": {"ids": ["rsv-in-host", "rsv-batch-1", "rsv-none"], "now": 3.0, "state": "released"},
    "reservations/end_empty_reservation": {"id": "rsv-none", "now": 3.0, "state": "released"},
    "reservations/expire_reservations": {"now": time.time(), "limit": 10},
    "reservations/expired_without_gpus": {"now": time.time(), "limit": 10},
    "reservations/begin_preemption": {
        "victims": [],
        "props": {
            "id": "rsv-pending-example",
            "holder": "t",
            "state": "pending",
            "created_at": 1.0,
            "expires_at": 2.0,
            "gpu_count": 1,
            "idempotency_key": "rsv-pending-example",
            "priority": 5,
            "grace_ends_at": 2.0,
        },
    },
    "reservations/complete_preemption": {
        "id": "rsv-pending-example",
        "now": 1.0,
        "expires_at": 5.0,
        "uuids": [FIRST.gpus[2].uuid],
        "victims": [],
    },
    "reservations/end_preemption": {"id": "rsv-pending-example", "now": 1.0, "state": "released"},
    "reservations/failed_holdings": {"cutoff": 0.0, "id": "", "limit": 10, "now": time.time()},
    "reservations/free_counts": {"hosts": [FIRST.hostname]},
    "reservations/free_orphaned_gpus": {"limit": 10},
    "reservations/orphaned_gpus": {},
    "reservations/pending_ready": {"limit": 10, "now": time.time()},
    "reservations/record_checkpoint": {"id": "rsv-example", "last_checkpoint_at": 1.0, "checkpoint_every_s": 600.0},
    "reservations/preemption_neighbourhood": {"hosts": ["h100-su1-n01"], "limit": 10},
    "reservations/resize_neighbourhood": {"id": "rsv-example", "limit": 10},
    "reservations/resize_reservation": {
        "id": "rsv-example",
        "add": [],
        "remove": [],
        "gpu_count": 1,
        "now": 1.0,
        "rank_order": [FIRST.gpus[1].uuid],
    },
    "reservations/set_phases": {"id": "rsv-example", "phase": "warmup", "phases": ["warmup=8xH100"]},
    "reservations/renew_reservation": {
        "id": "rsv-example",
        "now": 1.0,
        "ttl_s": 4,
        "default_ttl_s": 600,
        "max_ttl_s": 604800,
    },
    "reservations/reservation_get": {"ids": ["rsv-example"], "keys": []},
    "reservations/reservations_page": {"holder": "", "state": "", "after": "", "first": 5, "now": 2.0},
    "reservations/gpu_holders": {"uuids": [FIRST.gpus[1].uuid], "now": 0.0},
    "reservations/double_holds": {"now": 0.0},
    "reservations/double_held_slices": {"now": 0.0},
    "gpu_in_a_second_domain": {"uuid": FIRST.gpus[0].uuid, "domain": "example-extra-domain"},
    "host_without_free_count": {"name": "no-such-host"},
    "reservation_request_hash_set": {"key": "no-such-key", "hash": "0" * 64},
    "host_mig_slices": {"hosts": [MIG_HOST.hostname]},
    "mig_profiles": {"now": time.time()},
    "placement_mig_slices": {"profile": "3g.40gb", "now": time.time(), "exclude": []},
    "reservations/reservation_slices": {"ids": ["rsv-mig-example"]},
    "reservations/reserve_mig_slices": {
        "uuids": MIG_SLICES,
        "now": time.time(),
        "props": {
            "id": "rsv-mig-example",
            "holder": "t",
            "state": "active",
            "created_at": 1.0,
            "expires_at": 2.0,
            "gpu_count": 0,
            "slice_count": 2,
            "idempotency_key": "rsv-mig-example",
        },
    },
    "reservations/renew_mig_slices": {
        "id": "rsv-mig-example",
        "now": 1.0,
        "ttl_s": None,
        "default_ttl_s": 600,
        "max_ttl_s": 604800,
    },
    "reservations/free_mig_slices": {"ids": ["rsv-mig-example"]},
    "reservations/incomplete_reservations": {"now": 0.0},
    "reservations/preemptible_holdings": {"priority": 10},
    "reservations/lapsed_exists": {"now": 0.0},
    "reservations/prunable_exists": {"before": 0.0},
    "reservations/prune_ended": {"before": 0.0, "from": 0.0, "from_id": "", "limit": 10},
    "export_hosts": {"cluster": "default"},
    "export_switches": {"cluster": "default"},
    "metrics_domains": {},
    "reservations/live_count": {"now": 0.0},
    "reservations/preempt_and_reserve": {
        "uuids": [FIRST.gpus[2].uuid],
        "now": time.time(),
        "victims": ["rsv-none"],
        "props": {
            "id": "rsv-example-2",
            "holder": "t",
            "state": "active",
            "created_at": 1.0,
            "expires_at": 2.0,
            "gpu_count": 1,
            "idempotency_key": "rsv-example-2",
            "priority": 5,
        },
    },
    "largest_free_domains": {"top": 72, "limit": 3},
    "counter_drift": {},
    "search_hosts": {"pieces": ["su1-n01", "su1", "n01"], "first": 10},
    "search_switches": {"pieces": ["leaf"], "first": 10},
    "search_gpus": {"needle": "gpu-", "first": 10},
    "leaf_rail_load": {"cluster": "default"},
    "explorer_gpu_grid": {"after": "", "first": 10},
    "explorer_leaf_hosts": {"leaf": "h100-su1-leaf-r0"},
    # Sites (docs/sites.md)
    "sites_replace": {
        "now": 1.0,
        "sites": [
            {
                "name": "s1",
                "kind": "on-prem",
                "provider": None,
                "region": None,
                "location": None,
                "parent": None,
                "capacity_kinds": ["owned"],
                "spot_preemption_per_h": None,
            }
        ],
        "clusters": [{"site": "s1", "cluster": "default"}],
        "links": [{"a": "s1", "b": "s2", "bandwidth_gbps": 12.5, "latency_ms": 80.0}],
    },
    "sites_list": {},
    "site_links": {},
    "site_gpu_counts": {},
    "placement_host_sites": {"hosts": [FIRST.hostname]},
    "cost_facts_put": {
        "now": 1.0,
        "facts": [
            {
                "key": "egress|s1||",
                "kind": "egress",
                "site": "s1",
                "model": None,
                "capacity": None,
                "value": 0.09,
                "unit": "USD/GB",
                "source": "https://example.com",
                "as_of": "2025-01-15",
                "as_of_s": 1736899200.0,
                "catalog": "t",
                "note": None,
            }
        ],
    },
    "cost_facts": {},
    "site_reserved_gpus": {"site": "s1", "limit": 10},
    "site_free_excluded": {"site": "s1"},
    "gpu_measured_power": {"models": [FIRST.gpus[0].model], "min_utilization": 50.0},
}

# The derived scan forms (graphsvc.store.queries, SCAN_FORMS): their statements' examples, less the
# seek's parameters they do not take (its hints and lazy page bound).
EXAMPLES.update(
    {
        f"{name}_scan": {k: v for k, v in EXAMPLES[name].items() if k in default_registry()[f"{name}_scan"].parameters}
        for name in (
            "placement_domains_fit",
            "placement_hosts_fit",
            "placement_leaves_fit",
            "placement_cluster_blocks",
            "placement_leaf_total",
        )
    }
)


def test_every_query_has_an_example() -> None:
    assert sorted(registry_with_tests().names()) == sorted(EXAMPLES)


async def test_every_query_runs_on_each_store(gateway: Gateway) -> None:
    """... and every row it returns has the columns and types its // @row header declares."""
    for host in CLUSTER.hosts:
        await ingest_host(gateway, host)
    await ingest_fabric(gateway, CLUSTER.fabric())
    assert (await ingest_host(gateway, MIG_HOST)).applied
    gateway = with_test_queries(gateway)
    registry = gateway.registry
    # Reads first, then writes, and the graph reset last.
    order = sorted(EXAMPLES, key=lambda n: (registry[n].writes, n == "reset_graph", n))
    failures = {}
    for name in order:
        try:
            if registry[name].writes:
                rows = await gateway.write(name, EXAMPLES[name])
            else:
                rows = await gateway.read(name, EXAMPLES[name])
            signature = registry[name].signature
            assert signature is not None
            problems = sorted({p for row in rows for p in signature.check_row(row)})
            if problems:
                failures[name] = "; ".join(problems)
        except Exception as exc:  # noqa: BLE001 - collect them all, report together
            failures[name] = repr(exc)
    assert failures == {}
