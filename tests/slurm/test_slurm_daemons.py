"""The Slurm exports against real Slurm daemons (Debian's slurm-wlm), not only a parser.

One munged, one slurmctld and, one after another, one slurmd per host shape of the demo
(DGX H100, GB200 NVL72 tray, A100 PCIe, L40S), all on loopback with a throw-away config in
a temp dir. slurm.conf's NodeName lines are graphsvc's `slurm-nodes` export; topology.conf
is the `slurm-tree` export and gres.conf the `slurm-gres` export, unchanged except that
``File=/dev/...`` points at character devices made in the temp dir (slurmd refuses a GRES
file that is not a character device, and the test machine has no GPUs).

What is checked: slurmctld loads the tree (``scontrol show topology`` lists exactly the
exported switches and nodes, and no switch errors are logged); ``slurmd -G`` parses each
host's GRES with the exported cores; every slurmd registers (state IDLE, not INVALID_REG or
DRAIN), logs no "Invalid GRES", and slurmctld reports its GPUs bound to the sockets of their
NUMA nodes (``Gres=gpu:TYPE:N(S:...)``). Needs root, the Slurm and munge binaries and
mknod; skips saying which is missing (scripts/test.sh installs them with apt-get).

Slurm 22.05 has no topology/block plugin and no topology.yaml: those exports are checked
against their documented grammar in tests/integration/test_exports.py instead.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import httpx
import pytest

from graphsvc.store.gateway import Gateway
from graphsvc.synthetic.clusters import SyntheticCluster
from tests.cluster_helpers import load
from tests.conftest import free_port

BINARIES = ["munged", "slurmctld", "slurmd", "scontrol"]
SHAPES = ["h100-su1-n01", "gb200-rack01-t01", "a100-001", "l40s-001"]
# every host shape of the demo, in fewer hosts; GRAPHSVC_SLURM_TEST_PROFILE=demo runs the full 161-host demo
PROFILE = os.environ.get("GRAPHSVC_SLURM_TEST_PROFILE", "demo:sus=1,nvl72_racks=1,a100_hosts=2,l40s_hosts=2")
POLLS = 240  # registration polls, 0.25 s apart: bounds the work, the machine may be slow
DEVICE_MAJOR = {"nvidia": 195, "renderD": 226}


def _missing() -> str | None:
    absent = [b for b in BINARIES if shutil.which(b) is None]
    if absent:
        return f"Slurm/munge binaries missing ({', '.join(absent)}): scripts/test.sh installs slurm-wlm and munge"
    if os.geteuid() != 0:
        return "slurmd must run as root to register a node"
    return None


pytestmark = [pytest.mark.slow, pytest.mark.skipif(_missing() is not None, reason=_missing() or "")]


@dataclass
class Slurm:
    root: Path
    conf: Path
    env: dict[str, str]

    def scontrol(self, *args: str) -> str:
        out = subprocess.run(["scontrol", *args], env=self.env, capture_output=True, text=True, timeout=60)
        return out.stdout + out.stderr

    def log(self, name: str) -> str:
        path = self.root / "log" / name
        return path.read_text(errors="replace") if path.exists() else ""


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def make_devices(gres: str, dev: Path) -> str:
    """Character devices for every File= of gres.conf under `dev`; returns gres.conf pointing there."""
    dev.mkdir(exist_ok=True)
    for path in sorted(set(re.findall(r"File=(/dev/\S+)", gres))):
        name = path.rsplit("/", 1)[1]
        kind, num = re.match(r"([A-Za-z]+)(\d+)$", name).groups()  # type: ignore[union-attr]
        target = dev / name
        if not target.exists():
            os.mknod(target, 0o660 | 0o020000, os.makedev(DEVICE_MAJOR[kind], int(num)))
    return re.sub(r"File=/dev/(?:dri/)?", f"File={dev}/", gres)


def slurm_conf(root: Path, nodes: str, ctld_port: int, slurmd_port: int) -> str:
    node_lines = [
        f"{line} NodeAddr=127.0.0.1 NodeHostname=localhost"
        for line in nodes.splitlines()
        if line.startswith("NodeName=")
    ]
    return "\n".join(
        [
            "ClusterName=graphsvctest",
            "SlurmctldHost=localhost(127.0.0.1)",
            f"SlurmctldPort={ctld_port}",
            f"SlurmdPort={slurmd_port}",
            "SlurmUser=root",
            "SlurmdUser=root",
            "AuthType=auth/munge",
            "CredType=cred/munge",
            f"AuthInfo=socket={root}/munge/munge.sock",
            f"StateSaveLocation={root}/state",
            f"SlurmdSpoolDir={root}/spool/%n",
            f"SlurmctldPidFile={root}/slurmctld.pid",
            f"SlurmdPidFile={root}/slurmd-%n.pid",
            f"SlurmctldLogFile={root}/log/slurmctld.log",
            f"SlurmdLogFile={root}/log/slurmd-%n.log",
            "SlurmctldDebug=info",
            "SlurmdDebug=info",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "MpiDefault=none",
            "SelectType=select/cons_tres",
            "GresTypes=gpu",
            "TopologyPlugin=topology/tree",
            "SlurmdParameters=config_overrides",  # the test machine is not a DGX: take the config's sockets
            "ReturnToService=2",
            "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none",
            *node_lines,
            "PartitionName=all Nodes=ALL Default=YES State=UP",
        ]
    )


@pytest.fixture
def slurm_dir(tmp_path: Path) -> Path:
    root = tmp_path / "slurm"
    for sub in ("state", "log", "munge", "spool", "dev"):
        (root / sub).mkdir(parents=True)
    (root / "munge").chmod(0o700)
    return root


async def exports(client: httpx.AsyncClient, *fmts: str) -> list[str]:
    out = []
    for fmt in fmts:
        resp = await client.get(f"/v1/export/{fmt}")
        assert resp.status_code == 200, resp.text
        out.append(resp.text)
    return out


def parse_topology(text: str) -> dict[str, tuple[str, set[str]]]:
    """``scontrol show topology`` or topology.conf -> switch -> ("Nodes"|"Switches", members)."""
    out: dict[str, tuple[str, set[str]]] = {}
    for line in text.splitlines():
        fields = dict(p.split("=", 1) for p in line.split() if "=" in p)
        if "SwitchName" not in fields:
            continue
        kind = "Switches" if fields.get("Switches") else "Nodes"  # scontrol adds Nodes= to upper levels
        out[fields["SwitchName"]] = (kind, set(expand(fields.get(kind, ""))))
    return out


def expand(hostlist: str) -> list[str]:
    from graphsvc.exports.drift import expand_hostlist

    return expand_hostlist(hostlist)


def node_fields(text: str) -> dict[str, str]:
    return dict(p.split("=", 1) for p in text.split() if "=" in p)


async def test_slurm_daemons_accept_the_exports(gateway: Gateway, client: httpx.AsyncClient, slurm_dir: Path) -> None:
    demo: SyntheticCluster = await load(gateway, PROFILE)
    tree, gres, nodes = await exports(client, "slurm-tree", "slurm-gres", "slurm-nodes")
    root = slurm_dir
    conf = root / "slurm.conf"
    conf.write_text(slurm_conf(root, nodes, free_port(), free_port()) + "\n")
    (root / "topology.conf").write_text(tree)
    (root / "gres.conf").write_text(make_devices(gres, root / "dev"))
    key = root / "munge" / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o600)
    env = {**os.environ, "SLURM_CONF": str(conf)}
    slurm = Slurm(root, conf, env)
    procs: list[subprocess.Popen[bytes]] = []
    try:
        procs.append(
            subprocess.Popen(
                [
                    "munged",
                    "-F",
                    "-f",
                    f"--key-file={key}",
                    f"--socket={root}/munge/munge.sock",
                    f"--pid-file={root}/munge/munged.pid",
                    f"--log-file={root}/log/munged.log",
                    f"--seed-file={root}/munge/seed",
                ]
            )
        )
        _wait(lambda: (root / "munge" / "munge.sock").exists(), "munged socket")
        ctld = subprocess.Popen(["slurmctld", "-D", "-i", "-f", str(conf)], env=env)
        procs.append(ctld)
        _wait(lambda: "Running as primary controller" in slurm.log("slurmctld.log"), "slurmctld start")

        # slurmctld loaded exactly the exported tree
        shown = parse_topology(slurm.scontrol("show", "topology"))
        assert shown == parse_topology(tree)
        ctld_log = slurm.log("slurmctld.log")
        assert not re.search(r"error:.*(switch|topology)", ctld_log, re.IGNORECASE), ctld_log[-3000:]

        numa_of = {h.hostname: {g.index: g.numa_node for g in h.gpus} for h in demo.hosts}
        for host in SHAPES:
            cmd = ["slurmd", "-G", "-N", host, "-f", str(conf)]
            parsed = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
            out = parsed.stdout + parsed.stderr
            assert "error" not in out.lower(), out
            expected_cores = re.findall(rf"NodeName={host} .*?Cores=(\S+)", gres)
            assert re.findall(r"Cores=(\S+)", out) == expected_cores, out

            (root / "spool" / host).mkdir()
            slurmd = subprocess.Popen(["slurmd", "-D", "-N", host, "-f", str(conf)], env=env)
            try:
                _wait(partial(_registered, slurm, host), f"{host} registering")
                node = node_fields(slurm.scontrol("show", "node", host))
                log = slurm.log(f"slurmd-{host}.log")
                assert (
                    "Invalid GRES" not in log
                    and "gres" not in " ".join(line for line in log.splitlines() if "error" in line).lower()
                ), log
                assert node["State"] == "IDLE", node
                sockets = sorted({n for n in numa_of[host].values() if n is not None})
                gpus = len(numa_of[host])
                bound = f"(S:{sockets[0]}-{sockets[-1]})" if len(sockets) > 1 else f"(S:{sockets[0]})"
                assert node["Gres"].endswith(f":{gpus}{bound}"), node["Gres"]
            finally:
                _stop(slurmd)
    finally:
        for proc in reversed(procs):
            _stop(proc)


def _registered(slurm: Slurm, host: str) -> bool:
    state = node_fields(slurm.scontrol("show", "node", host)).get("State", "")
    return "IDLE" in state or "INVALID" in state or "DRAIN" in state


def _wait(ready: Callable[[], bool], what: str) -> None:
    for _ in range(POLLS):
        if ready():
            return
        time.sleep(0.25)
    pytest.fail(f"gave up waiting for {what} after {POLLS} polls")
