"""``topo-collector``: collect this host's topology, import existing dumps, keep the service current."""

from __future__ import annotations

import argparse
import logging
import re
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from topo_facts import HostFacts, HostMetrics

from topo_collector.agent import Agent, Outcome, Sender
from topo_collector.amdsmi_api import AmdSmiApi, ReplayAmdSmi
from topo_collector.collect import amd_inventory, build_host_facts, local_hostname, nvml_inventory
from topo_collector.importers import FORMATS, ImportOptions, ImportResult, import_hosts
from topo_collector.nvml import GpuIdentities, read_metrics
from topo_collector.nvml_api import NvmlApi, NvmlError, RealNvml, RecordingNvml, ReplayNvml
from topo_collector.spool import Spool
from topo_collector.sysfs import read_sysfs

log = logging.getLogger("topo_collector")

_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600}


def duration(text: str) -> float:
    """'60s', '10m', '1h', '500ms' or plain seconds."""
    m = re.fullmatch(r"\s*([\d.]+)\s*(ms|s|m|h)?\s*", text)
    if not m:
        raise argparse.ArgumentTypeError(f"not a duration: {text!r} (try 60s, 10m, 1h)")
    value = float(m.group(1)) * _UNITS[m.group(2) or "s"]
    if value <= 0:
        raise argparse.ArgumentTypeError("a duration must be positive")
    return value


def _location(p: argparse.ArgumentParser) -> None:
    p.add_argument("--host", help="host name to report (default: this machine's short name)")
    p.add_argument("--cluster", default="default")
    p.add_argument("--rack")
    p.add_argument("--scalable-unit")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="topo-collector", description=__doc__)
    parser.add_argument("--log-level", default="info")
    sub = parser.add_subparsers(dest="command", required=True)

    collect = sub.add_parser("collect", help="collect this host's facts")
    _location(collect)
    collect.add_argument("--once", action="store_true", help="one collection (the default for this command)")
    collect.add_argument("--dry-run", action="store_true", help="print the facts as JSON, send nothing")
    collect.add_argument("--server", help="send the facts to this service")
    collect.add_argument("--token", help="bearer token (a collector token naming this host)")
    collect.add_argument("--nvml-replay", type=Path, help="answer NVML calls from a recording (testing)")
    collect.add_argument("--amdsmi-replay", type=Path, help="answer AMD SMI calls from a recording (testing)")

    imp = sub.add_parser(
        "import",
        help="turn an NCCL/RCCL XML, hwloc XML, `nvidia-smi topo -m`, `amd-smi topology` or "
        "`rocm-smi --showtopo` file into facts",
    )
    imp.add_argument("file", type=Path)
    _location(imp)
    imp.add_argument("--format", choices=list(FORMATS))
    imp.add_argument("--gpu-model", help="GPU model to record when the file does not name one")
    imp.add_argument("--hosts", help="multi-host dump: comma-separated host names, one per host, in file order")
    imp.add_argument(
        "--host-pattern",
        help="multi-host dump: host names from a pattern, {n} 1-based, {i} 0-based, {hash} the host hash "
        "(e.g. 'rack1-tray{n:02d}')",
    )
    imp.add_argument(
        "--nvlink-domain", help="name of the NVLink fabric domain the GPUs share (NVL72 trays imported one by one)"
    )
    imp.add_argument(
        "--allow-no-gpus",
        action="store_true",
        help="import a file that lists no GPUs (the service then holds no GPUs for that host)",
    )
    imp.add_argument("--server", help="send the facts to this service instead of printing them")
    imp.add_argument("--token", help="bearer token for the service")

    run = sub.add_parser("run", help="keep the service current on a schedule, spooling through outages")
    _location(run)
    run.add_argument("--server", required=True)
    run.add_argument("--interval", type=duration, default=60.0, help="full facts (default 60s)")
    run.add_argument("--metrics-interval", type=duration, default=10.0, help="GPU metrics (default 10s)")
    run.add_argument("--spool-dir", type=Path, default=Path("/var/spool/topo-collector"))
    run.add_argument("--token", help="bearer token for the service")
    run.add_argument("--nvml-replay", type=Path, help="answer NVML calls from a recording (testing)")
    run.add_argument(
        "--allow-no-gpus",
        action="store_true",
        help="send a collection with no GPUs even when the last one had GPUs (the service then deletes them)",
    )

    rec = sub.add_parser("record-nvml", help="record this host's NVML answers to a JSON file (fixtures)")
    rec.add_argument("out", type=Path)
    return parser


def _nvml(path: Path | None) -> NvmlApi:
    return ReplayNvml.load(path) if path else RealNvml()


def _facts(args: argparse.Namespace, nv: NvmlApi, known: GpuIdentities | None = None) -> HostFacts:
    """`known`: the GPUs earlier collections of this process saw, so a lost GPU keeps its uuid."""
    replay = getattr(args, "amdsmi_replay", None)
    amd: AmdSmiApi | None = ReplayAmdSmi.load(replay) if replay else None
    host = args.host or local_hostname()
    return build_host_facts(
        host,
        nvml_inventory(nv, known=known, host=host),
        read_sysfs(),
        cluster=args.cluster,
        rack=args.rack,
        scalable_unit=args.scalable_unit,
        amd=amd_inventory(amd),
    )


def _push_once(server: str, facts: HostFacts, token: str | None = None) -> None:
    with Sender(server, token=token) as sender:
        outcome, detail = sender.send_body("facts", facts.hostname, facts.model_dump_json().encode())
    if outcome is not Outcome.ACKED:
        raise RuntimeError(f"the service did not take the facts: {detail}")
    print(f"sent {facts.hostname}: {len(facts.gpus)} GPUs, {len(facts.nics)} NICs", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)
    try:
        if args.command == "collect":
            facts = _facts(args, _nvml(args.nvml_replay))
            if args.server and not args.dry_run:
                _push_once(args.server, facts, args.token)
            else:
                print(facts.model_dump_json(indent=2))
        elif args.command == "import":
            _import(args)
        elif args.command == "run":
            _run(args)
        elif args.command == "record-nvml":
            recorder = RecordingNvml(RealNvml())
            nvml_inventory(recorder)
            read_metrics(recorder)
            recorder.save(args.out, {"host": local_hostname(), "recorded_at": datetime.now(UTC).isoformat()})
            print(f"recorded {len(recorder.calls)} NVML answers to {args.out}", file=sys.stderr)
    except (OSError, ValueError, RuntimeError, NvmlError) as exc:
        print(f"topo-collector: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 1
    except RecursionError:
        print("topo-collector: error: the file nests elements too deeply to be a topology file", file=sys.stderr)
        return 1
    return 0


def _import(args: argparse.Namespace) -> None:
    """Parse and check every host first; send (or print) only when all are good: nothing half-sent."""
    opts = ImportOptions(
        host=args.host or args.file.stem,
        cluster=args.cluster,
        rack=args.rack,
        scalable_unit=args.scalable_unit,
        gpu_model=args.gpu_model,
        host_names=[h.strip() for h in args.hosts.split(",") if h.strip()] if args.hosts else None,
        host_pattern=args.host_pattern,
        nvlink_domain=args.nvlink_domain,
    )
    result: ImportResult = import_hosts(args.file, opts, args.format)
    for facts in result.hosts:
        if not facts.gpus and not args.allow_no_gpus:
            raise ValueError(
                f"{args.file}: no GPUs found for host {facts.hostname}; importing it would remove every GPU the "
                "service holds for that host. Pass --allow-no-gpus if the host really has none"
            )
    for warning in result.warnings:
        print(f"topo-collector: warning: {warning}", file=sys.stderr)
    if args.server:
        for facts in result.hosts:
            _push_once(args.server, facts, args.token)
    elif len(result.hosts) == 1:
        print(result.hosts[0].model_dump_json(indent=2))
    else:
        print("[" + ",\n".join(f.model_dump_json(indent=2) for f in result.hosts) + "]")


def _run(args: argparse.Namespace) -> None:
    nv = _nvml(args.nvml_replay)
    host = args.host or local_hostname()
    known = GpuIdentities()

    def metrics() -> HostMetrics:
        try:
            gpus = read_metrics(nv, known=known)
        except NvmlError:
            gpus = []
        return HostMetrics(hostname=host, collected_at=datetime.now(UTC), gpus=gpus)

    args.host = host
    agent = Agent(
        spool=Spool(args.spool_dir),
        sender=Sender(args.server, token=args.token),
        collect_facts=lambda: _facts(args, nv, known),
        collect_metrics=metrics,
        allow_no_gpus=args.allow_no_gpus,
    )
    agent.run(args.interval, args.metrics_interval)


if __name__ == "__main__":
    raise SystemExit(main())
