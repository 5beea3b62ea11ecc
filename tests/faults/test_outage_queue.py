"""Requests queued behind a batch that found the store unreachable fail with it, at once.

Group commit (graphsvc/store/group_commit.py) sends what arrives while a batch is in the store as
the next statement. Before: with the store down, that next statement paid a whole attempt of its
own (on Neo4j the driver's retries, ~7 s) to hear the same "unavailable", so the queued requests
answered 503 after 14-25 s. Now they get the failed batch's error at once; a request arriving
after the failure still asks the store, which may be back.

The outage is a cable between the service and the session's store (a byte-forwarding proxy): it
holds the first batch's connection unanswered until the queued requests wait behind it, then is
cut (connections reset, new ones refused), then mended. The shared server itself never stops. The
test counts the statements the gateway sent during the outage; it measures no time.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from collections.abc import AsyncIterator, Callable, Coroutine
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from graphsvc.placement.request import PlacementRequest
from graphsvc.reservations.service import Reservation, ReservationService
from graphsvc.store.embedded import EmbeddedFalkorDB
from graphsvc.store.errors import StoreBusyError, StoreUnavailableError
from graphsvc.store.falkordb_backend import FalkorBackend
from graphsvc.store.gateway import Gateway
from graphsvc.store.group_commit import GroupCommit
from graphsvc.store.neo4j_backend import Neo4jBackend
from tests.cluster_helpers import load
from tests.stores import NEO4J_TEST_TIMEOUT_S, Neo4jServer

QUEUED = 4  # under min_split (8): on FalkorDB, too, they wait behind the batch in flight
POLLS = 6000  # bounded waits count polls, not seconds: a loaded machine only takes longer
Address = tuple[str, ...]  # ("unix", path) or ("tcp", host, port)


class Cable:
    """Forwards bytes to the store; `hold` answers new connections with silence (and drops the
    live ones), `cut` resets them all and refuses new ones (the server gone), `mend` reconnects.

    Runs on its own thread and event loop: falkordb-py asks the server whether it is a cluster
    with a blocking call while the backend opens, which a proxy on the test's loop never answers."""

    def __init__(self, upstream: Address, listen: Address) -> None:
        self.upstream = upstream
        self.address = listen
        self.server: asyncio.AbstractServer | None = None
        self.holding = False
        self.held = 0  # connections accepted while holding
        self.refusing = False
        self.refused = 0  # connections reset at once while refusing
        self.open: set[asyncio.StreamWriter] = set()
        self.released: asyncio.Event | None = None
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="cable", daemon=True)
        self.thread.start()

    def _call(self, work: Callable[[], Coroutine[Any, Any, None]]) -> None:
        asyncio.run_coroutine_threadsafe(work(), self.loop).result(timeout=120)  # a bound on a hang

    def start(self) -> None:
        self._call(self._listen)

    async def _listen(self) -> None:
        self.released = asyncio.Event()
        if self.address[0] == "unix":
            self.server = await asyncio.start_unix_server(self._serve, self.address[1])
        else:
            self.server = await asyncio.start_server(self._serve, self.address[1], int(self.address[2]))
            self.address = ("tcp", self.address[1], str(self.server.sockets[0].getsockname()[1]))

    async def _connect_upstream(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        if self.upstream[0] == "unix":
            return await asyncio.open_unix_connection(self.upstream[1])
        return await asyncio.open_connection(self.upstream[1], int(self.upstream[2]))

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.refusing:
            self.refused += 1
            writer.transport.abort()
            return
        self.open.add(writer)
        try:
            if self.holding:
                self.held += 1
                assert self.released is not None
                await self.released.wait()
                return
            up_reader, up_writer = await self._connect_upstream()
            self.open.add(up_writer)
            try:
                await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
            finally:
                self.open.discard(up_writer)
                up_writer.close()
        finally:
            self.open.discard(writer)
            writer.close()

    def _drop_all(self) -> None:
        for writer in list(self.open):
            writer.transport.abort()  # a reset, as a dying server leaves it
        self.open.clear()

    def hold(self) -> None:
        async def hold() -> None:
            self.holding = True
            self._drop_all()

        self._call(hold)

    def refuse(self) -> None:
        """The server gone, like `cut`, but each new connection is counted before its reset."""

        async def refuse() -> None:
            self.refusing = True
            self._drop_all()

        self._call(refuse)

    def cut(self) -> None:
        async def cut() -> None:
            if self.server is not None:
                self.server.close()  # refuse new connections
                self.server = None
            if self.released is not None:
                self.released.set()
            self._drop_all()

        self._call(cut)

    def mend(self) -> None:
        self.holding = False
        if self.refusing:
            self.refusing = False  # still listening
            return
        self.start()

    def close(self) -> None:
        self.cut()
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=120)
        if not self.thread.is_alive():
            self.loop.close()


async def _pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
    with contextlib.suppress(ConnectionError, OSError):
        while data := await src.read(65536):
            dst.write(data)
            await dst.drain()
    with contextlib.suppress(ConnectionError, OSError, RuntimeError):
        dst.close()


@pytest.fixture
async def through_cable(
    store: str, gateway: Gateway, request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[tuple[Gateway, Cable]]:
    """A second gateway on the test's graph whose every connection runs through a `Cable`."""
    backend: FalkorBackend | Neo4jBackend
    if store == "neo4j":
        server: Neo4jServer = request.getfixturevalue("neo4j_server")
        target = urlsplit(server.uri)
        cable = Cable(("tcp", target.hostname or "127.0.0.1", str(target.port or 7687)), ("tcp", "127.0.0.1", "0"))
        cable.start()  # mended on the port it got here
        # A connect that waits longer than the test holds one; retries of a lost connection for
        # 2 s (production: 5 s), which bounds how long each attempt during the cut takes.
        backend = Neo4jBackend(
            f"bolt://127.0.0.1:{cable.address[2]}",
            user=server.user,
            password=server.password,
            max_retry_s=2.0,
            connect_timeout_s=120.0,
        )
    else:
        embedded: EmbeddedFalkorDB = request.getfixturevalue("embedded_server")
        assert isinstance(gateway.backend, FalkorBackend)
        socket = str(tmp_path / "cable.sock")
        cable = Cable(("unix", str(embedded.socket_path)), ("unix", socket))
        cable.start()
        backend = FalkorBackend(gateway.backend.graph_name, unix_socket=socket, kind="embedded")
    try:
        await backend.open()
        yield Gateway(backend, timeout_s=NEO4J_TEST_TIMEOUT_S), cable
    finally:
        cable.cut()  # first: a close that waits on a held connection would wait for ever
        with contextlib.suppress(Exception):
            await backend.close()
        cable.close()


def _statements(gw: Gateway) -> int:
    return sum(stat.calls for stat in gw.stats.values())


async def _until(done: Callable[[], bool], what: str) -> None:
    for _ in range(POLLS):
        if done():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"never: {what}")


@pytest.mark.parametrize("keyed", [False, True], ids=["reserve-batch", "idempotency-key-read"])
async def test_requests_queued_behind_a_batch_during_an_outage_fail_with_it_without_an_attempt_each(
    gateway: Gateway, through_cable: tuple[Gateway, Cable], keyed: bool
) -> None:
    """Single-host reserves (their batch answers each request apart, a failed statement as its
    answer) and idempotency-key reads (the batch raises): both group commits."""
    await load(gateway, "l40s:hosts=2")
    gw, cable = through_cable
    svc = ReservationService(gw)
    svc.engine.facts.ttl_s = float("inf")  # the models and host count stay read: only the batch asks the store
    group: GroupCommit[Any, Any] | None = svc.key_group if keyed else svc.group
    assert group is not None
    serial = iter(range(1000))

    def reserve() -> asyncio.Task[object]:
        n = next(serial)
        key = f"outage-{os.getpid()}-{n}" if keyed else None
        request = PlacementRequest(gpus=1, model="L40S")
        return asyncio.create_task(svc.reserve(holder=f"job-{n}", request=request, idempotency_key=key))

    assert isinstance(await reserve(), Reservation)  # the store answers through the cable
    sent, batches = _statements(gw), group.batches

    cable.hold()  # the store stops answering
    first = reserve()
    await _until(lambda: cable.held >= 1, "the first batch reached the store")
    queued = [reserve() for _ in range(QUEUED)]
    await _until(lambda: len(group.pending) == QUEUED, "the others queued behind it")
    assert not first.done() and group.batches == batches + 1  # they wait behind the batch in the store

    cable.cut()  # and is gone: the batch fails as unavailable
    outcomes = await asyncio.gather(first, *queued, return_exceptions=True)
    error = outcomes[0]
    assert isinstance(error, StoreUnavailableError) and not isinstance(error, StoreBusyError), outcomes
    assert all(out is error for out in outcomes[1:]), outcomes  # the first batch's error, at once
    assert group.batches == batches + 1  # no batch of their own
    assert _statements(gw) == sent + 1  # the one statement that found the store down

    # The group keeps nothing of the outage: a request after it asks the store, and is answered once
    # it is back (on Neo4j after one connection the backend tries first: it saw the server unreachable).
    cable.mend()
    assert isinstance(await reserve(), Reservation)
    assert group.batches == batches + 2


async def test_each_request_during_an_outage_tries_one_connection_not_the_drivers_retries(
    gateway: Gateway, through_cable: tuple[Gateway, Cable]
) -> None:
    """The first request of an outage may retry (on Neo4j the driver's managed transaction does,
    for `max_retry_s`: a blip passes unnoticed); the ones after it try one connection each and
    answer "unavailable" at once (7 s a call before, on Neo4j). Counted: connection attempts."""
    await load(gateway, "l40s:hosts=1")
    gw, cable = through_cable
    assert await gw.read("health_counts")  # answered through the cable
    cable.refuse()  # the server gone: every connection reset as it opens
    with pytest.raises(StoreUnavailableError):
        await gw.read("health_counts")  # (on FalkorDB: its live connection reset, no new one tried)
    for _ in range(3):
        before = cable.refused
        with pytest.raises(StoreUnavailableError) as failed:
            await gw.read("health_counts")
        assert not isinstance(failed.value, StoreBusyError)
        assert cable.refused - before == 1, f"{cable.refused - before} connection attempts for one request"
    cable.mend()  # back: the next request is answered, and the one after it runs as usual
    for _ in range(2):
        assert await gw.read("health_counts")
