"""A FalkorDB server this service does not start: its plan cache is checked at startup, and one
smaller than the service's named statements is logged with the size to set (plan_cache.py)."""

from __future__ import annotations

import logging
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import redis

from graphsvc.settings import Settings
from graphsvc.store.embedded import EmbeddedOptions, locate_binaries
from graphsvc.store.factory import open_store
from graphsvc.store.plan_cache import sized_plan_cache
from tests.conftest import free_port


@contextmanager
def _falkordb_on_tcp(tmp_path: Path, cache_size: int) -> Iterator[int]:
    """redis-server with the FalkorDB module on a TCP port, as an operator would run one. The port
    is found free first (redis-server's --port 0 means no TCP at all), so another process can take
    it before redis-server binds it: a server that exits while starting is started again on
    another port (three tries)."""
    server, module = locate_binaries(EmbeddedOptions(data_dir=tmp_path))
    for _ in range(3):
        port = free_port()
        proc = subprocess.Popen(
            [server, "--port", str(port), "--bind", "127.0.0.1", "--dir", str(tmp_path), "--save", "",
             "--appendonly", "no", "--loadmodule", module, "CACHE_SIZE", str(cache_size)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        if _answers(port, proc):
            break
        proc.kill()
        proc.wait(timeout=30)
    else:
        raise AssertionError("redis-server exited while starting, three times")
    try:
        yield port
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _answers(port: int, proc: subprocess.Popen[bytes]) -> bool:
    """True once redis-server answers on `port`; False if it exited first or another process
    answers there (its port was taken)."""
    client = redis.Redis(port=port, socket_timeout=5, socket_connect_timeout=5)
    for _ in range(300):
        if proc.poll() is not None:
            return False
        try:
            return bool(client.info("server")["process_id"] == proc.pid)  # not another server on that port
        except redis.ConnectionError:
            time.sleep(0.1)
        except redis.RedisError:  # another kind of server there, or one that does not answer
            return False
    proc.kill()
    raise AssertionError("redis-server did not answer in 30 s")


@pytest.mark.parametrize(("cache_size", "warned"), [(25, True), (sized_plan_cache(), False)])
async def test_a_small_plan_cache_is_warned_at_startup(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, cache_size: int, warned: bool
) -> None:
    with _falkordb_on_tcp(tmp_path, cache_size) as port, caplog.at_level(logging.WARNING, "graphsvc.store.factory"):
        async with open_store(Settings(store=f"falkordb://127.0.0.1:{port}", graph="plans")) as gw:
            assert await gw.read("graph_is_empty", {}) is not None  # the store answers either way
    lines = [r.getMessage() for r in caplog.records if "CACHE_SIZE" in r.getMessage()]
    assert bool(lines) == warned, lines
    if warned:
        assert f"keeps {cache_size} compiled plans" in lines[0] and f"CACHE_SIZE {sized_plan_cache()}" in lines[0]
