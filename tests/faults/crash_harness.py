"""The kill -9 crash harness shared by the crash tests: a service on a private store with a
synthetic cluster, a storm of client threads, and a kill -9 of store and service once the storm
has done enough, so each test only says what its clients do and what must survive."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from pathlib import Path

from graphsvc.cli import push_cluster
from graphsvc.synthetic.clusters import build
from tests.service import ServiceProcess, private_neo4j


def start_with_cluster(tmp_path: Path, store: str, spec: str) -> tuple[ServiceProcess, list[str]]:
    """Start a service on its own store, push the cluster `spec`, and return it with its GPU uuids."""
    service = ServiceProcess(tmp_path / "data", neo4j=private_neo4j(store, tmp_path))
    service.start()
    cluster = build(spec)
    asyncio.run(push_cluster(service.url, cluster))
    return service, [g.uuid for h in cluster.hosts for g in h.gpus]


def kill_9_mid_storm(
    service: ServiceProcess,
    clients: int,
    client: Callable[[int, threading.Event], None],
    enough: Callable[[], bool],
) -> None:
    """Run `clients` threads of `client(n, stop)`, kill -9 the service once `enough()` holds (or
    every client has finished its bounded work), then stop and join the clients."""
    stop = threading.Event()
    threads = [threading.Thread(target=client, args=(n, stop)) for n in range(clients)]
    for t in threads:
        t.start()
    while not enough() and any(t.is_alive() for t in threads):
        time.sleep(0.01)
    service.kill9()
    stop.set()
    for t in threads:
        t.join()
