"""Runs the collector against real NVML on a GPU machine and checks it against nvidia-smi.

Not part of the pytest suite (it needs an NVIDIA GPU and driver). Usage, on the GPU host:

    python tests/device/check_collector_on_gpu.py OUT_DIR

It writes OUT_DIR/facts.json (what the collector reports), OUT_DIR/nvml-recording.json (the
raw NVML answers, usable as a replay fixture), OUT_DIR/nvidia-smi-q.xml, OUT_DIR/topo-m.txt
and OUT_DIR/report.json, and exits non-zero if any check fails. Checks:
  * GPU count, uuids, names, PCI bus ids and total memory equal `nvidia-smi -q -x`;
  * every GPU pair `nvidia-smi topo -m` shows as NV<k> is NVLink-connected in the facts with
    k lanes (directly, or through NVSwitches: then k is the GPU's total switch lanes);
  * the NUMA node of each GPU equals topo -m's NUMA affinity where it gives one.
"""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from topo_collector.collect import build_host_facts, local_hostname
from topo_collector.importers import ImportOptions, parse_smi_topo
from topo_collector.nvml import read_nvml
from topo_collector.nvml_api import RealNvml, RecordingNvml
from topo_collector.sysfs import read_sysfs
from topo_facts import PeerType


def main(out: Path) -> int:
    out.mkdir(parents=True, exist_ok=True)
    recorder = RecordingNvml(RealNvml())
    facts = build_host_facts(local_hostname(), read_nvml(recorder), read_sysfs())
    recorder.save(out / "nvml-recording.json", {"host": facts.hostname})
    (out / "facts.json").write_text(facts.model_dump_json(indent=1))
    smi_q = subprocess.run(["nvidia-smi", "-q", "-x"], capture_output=True, text=True, check=True).stdout
    # topo -m can fail where nvidia-smi -q works (a sandboxed kernel without the PCI tree): then the
    # NVLink and NUMA checks have nothing to compare with, and the report says so.
    topo_run = subprocess.run(["nvidia-smi", "topo", "-m"], capture_output=True, text=True, check=False)
    topo = topo_run.stdout if topo_run.returncode == 0 else ""
    (out / "nvidia-smi-q.xml").write_text(smi_q)
    (out / "topo-m.txt").write_text(topo)
    problems: list[str] = []
    root = ET.fromstring(smi_q)
    smi_gpus = root.findall("gpu")
    if len(smi_gpus) != len(facts.gpus):
        problems.append(f"GPU count: nvidia-smi {len(smi_gpus)}, collector {len(facts.gpus)}")
    for el, gpu in zip(smi_gpus, facts.gpus, strict=False):
        bus = (el.get("id") or "").lower()
        if bus.startswith("0000") and len(bus) > 12:
            bus = bus[4:]  # nvidia-smi prints an 8-digit PCI domain
        want = {
            "uuid": el.findtext("uuid"),
            "name": el.findtext("product_name"),
            "bus": bus,
            "mem": int((el.findtext("fb_memory_usage/total") or "0 MiB").split()[0]),
        }
        got = {"uuid": gpu.uuid, "name": gpu.model, "bus": gpu.pci_bus_id, "mem": gpu.memory_mib}
        for key in want:
            if str(want[key]) != str(got[key]):
                problems.append(f"GPU {gpu.index} {key}: nvidia-smi {want[key]!r}, collector {got[key]!r}")
    by_index = {g.index: g for g in facts.gpus}
    matrix_gpus = parse_smi_topo(topo, ImportOptions(host="smi")).gpus if topo else []
    for g in matrix_gpus:
        mine = by_index.get(g.index)
        if mine is None:
            continue
        if g.numa_node is not None and mine.numa_node is not None and g.numa_node != mine.numa_node:
            problems.append(f"GPU {g.index} NUMA: topo -m {g.numa_node}, collector {mine.numa_node}")
        switch_lanes = sum(link.links for link in mine.nvlinks if link.peer_type is PeerType.NVSWITCH)
        for link in g.nvlinks:
            peer_index = int(link.peer_id.rsplit("gpu", 1)[1])
            peer = by_index[peer_index]
            direct = [x.links for x in mine.nvlinks if x.peer_type is PeerType.GPU and x.peer_id == peer.uuid]
            lanes = direct[0] if direct else switch_lanes
            if lanes != link.links:
                problems.append(f"GPU {g.index}-{peer_index}: topo -m NV{link.links}, collector {lanes} lanes")
    report = {
        "host": facts.hostname,
        "gpus": len(facts.gpus),
        "nvswitches": len(facts.nvswitches),
        "nics": len(facts.nics),
        "topo_m": "compared" if topo else f"topo -m failed (rc {topo_run.returncode}): {topo_run.stderr[:300]}",
        "problems": problems,
        "ok": not problems,
    }
    (out / "report.json").write_text(json.dumps(report, indent=1))
    print(json.dumps(report, indent=1))
    return 0 if not problems else 1


if __name__ == "__main__":
    raise SystemExit(main(Path(sys.argv[1] if len(sys.argv) > 1 else "device-out")))
