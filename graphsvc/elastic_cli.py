"""``graphsvc resize | preempt | next-phase | replace``: jobs that change, from a shell.

Exit codes: 0 done, 2 a typed refusal (infeasible, conflict, invalid, not found, lease
expired), 1 the service could not be asked (graphsvc.cli prints that line).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

SERVER_HELP = "the service's base URL (default: $GRAPHSVC_URL, else http://127.0.0.1:8000)"

RESIZE = """mutation($id: String!, $gpus: Int, $remove: [String!], $ranks: [Int!], $keep: Boolean!) {
  resize(id: $id, gpus: $gpus, remove: $remove, removeRanks: $ranks, keepLayout: $keep) { __typename
  ... on Resized { added removed layoutKept reason rankOrder }
  ... on Conflict { message } ... on Infeasible { reasons { constraint message nearestFeasible } }
  ... on ValidationError { field message } ... on NotFound { message } ... on LeaseExpired { message } } }"""
PREEMPT = """mutation($input: PreemptInput!) { preempt(input: $input) { __typename
  ... on Reservation { id state gpus { uuid } }
  ... on PendingPreemption { reservation { id } graceEndsAt lostGpuHours reason victims { reservation holder } }
  ... on Infeasible { reasons { constraint message nearestFeasible } } ... on ValidationError { field message } } }"""
NEXT_PHASE = """query($id: String!) { nextPhase(id: $id) { __typename
  ... on PhaseFit { phase nextPhase request fits gpusNow gpusNext add layoutKept reason }
  ... on NotFound { message } ... on LeaseExpired { message } } }"""
REPLACE = """mutation($id: String!, $apply: Boolean!) { replaceFailed(id: $id, apply: $apply) { __typename
  ... on Replacement { failed ranks { rank gpu } layoutKept applied reason } ... on NotFound { message } } }"""


def _options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--server", metavar="URL", help=SERVER_HELP)
    p.add_argument("--output", "-o", choices=["table", "json"], default="table", help="table (default) or json")


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def add_parsers(sub: Any, ttl: Any) -> None:
    resize = sub.add_parser("resize", help="grow (keeping the layout) or shrink a live reservation")
    resize.add_argument("id", help="the reservation id (rsv-...)")
    resize.add_argument("--gpus", type=int, help="the new size")
    resize.add_argument("--remove-ranks", type=_ints, help="ranks to give back, e.g. 6,7")
    resize.add_argument("--remove", help="GPU uuids to give back, comma-separated")
    resize.add_argument("--allow-layout-change", action="store_true", help="grow even where the layout breaks")
    _options(resize)
    preempt = sub.add_parser("preempt", help="reserve, preempting lower-priority work after a grace period")
    preempt.add_argument("request", help='a text request, e.g. "64xGB200 nvlink=full-mesh"')
    preempt.add_argument("--holder", required=True, help="who the reservation is for (job name)")
    preempt.add_argument("--priority", type=int, required=True, help="only lower-priority preemptible work yields")
    preempt.add_argument("--grace", type=ttl, default=300, help="time the victims get to checkpoint (default 5m)")
    preempt.add_argument("--ttl", type=ttl, default=600, help="the lease once the GPUs move (default 10m)")
    _options(preempt)
    phase = sub.add_parser("next-phase", help="does the reservation's next planned phase fit, and where")
    phase.add_argument("id", help="the reservation id (rsv-...)")
    _options(phase)
    replace = sub.add_parser("replace", help="replace a reservation's failed or stale GPUs, keeping its layout")
    replace.add_argument("id", help="the reservation id (rsv-...)")
    replace.add_argument("--propose", action="store_true", help="only say what would replace them")
    _options(replace)


COMMANDS = ("resize", "preempt", "next-phase", "replace")


def run(args: argparse.Namespace) -> int:
    from graphsvc.cli import _graphql
    from graphsvc.client import request_input

    if args.command == "resize":
        remove = [u for u in (args.remove or "").split(",") if u]
        variables: dict[str, object] = {"id": args.id, "gpus": args.gpus, "remove": remove or None,
                                        "ranks": args.remove_ranks, "keep": not args.allow_layout_change}  # fmt: skip
        out = _graphql(args.server, RESIZE, variables)["resize"]
    elif args.command == "preempt":
        payload = {"holder": args.holder, "request": request_input(args.request), "priority": args.priority,
                   "graceSeconds": args.grace, "ttlSeconds": args.ttl}  # fmt: skip
        out = _graphql(args.server, PREEMPT, {"input": payload})["preempt"]
    elif args.command == "next-phase":
        out = _graphql(args.server, NEXT_PHASE, {"id": args.id})["nextPhase"]
    else:
        out = _graphql(args.server, REPLACE, {"id": args.id, "apply": not args.propose})["replaceFailed"]
    if args.output == "json":
        print(json.dumps(out, indent=2))
    else:
        print(_table(out))
    ok = out["__typename"] in ("Resized", "Reservation", "PendingPreemption", "PhaseFit", "Replacement")
    return 0 if ok else 2


def _table(out: dict[str, Any]) -> str:
    kind = out["__typename"]
    if kind == "Resized":
        layout = "layout kept" if out["layoutKept"] else "layout NOT kept"
        return f"resized: +{len(out['added'])} -{len(out['removed'])} GPUs, {layout}; {out['reason']}"
    if kind == "PendingPreemption":
        victims = ", ".join(f"{v['reservation']} ({v['holder']})" for v in out["victims"])
        return (f"{out['reservation']['id']}: pending until {out['graceEndsAt']:.0f}; victims warned: {victims}; "
                f"{out['lostGpuHours']:.2f} GPU-hours lost\n{out['reason']}")  # fmt: skip
    if kind == "Reservation":
        return f"{out['id']}: {out['state']}, {len(out['gpus'])} GPUs"
    if kind == "PhaseFit":
        if out["nextPhase"] is None:
            return f"phase {out['phase']}: {out['reason']}"
        verdict = "fits" if out["fits"] else "does NOT fit"
        return (f"next phase {out['nextPhase']} ({out['request']}): {verdict}, {out['gpusNow']} -> {out['gpusNext']} "
                f"GPUs; {out['reason']}")  # fmt: skip
    if kind == "Replacement":
        ranks = ", ".join(f"rank {r['rank']} -> {r['gpu']}" for r in out["ranks"])
        return f"{'replaced' if out['applied'] else 'proposed'}: {ranks}; {out['reason']}"
    if kind == "Infeasible":
        return "infeasible: " + "; ".join(r["message"] for r in out["reasons"])
    if kind == "ValidationError":
        return f"invalid [{out['field']}]: {out['message']}"
    return f"{kind}: {out.get('message', '')}"
