"""``graphsvc sites``, ``graphsvc prices load FILE``, ``graphsvc compare-sites REQUEST``: client
commands against a running service (standard library only at import, like graphsvc.cli).

Exit codes: 0 answered (compare-sites: a site satisfies the objective), 2 answered but no site
does, 1 the question could not be asked (bad input, service unreachable).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

OBJECTIVES = ["cheapest", "fastest", "cheapest-under-deadline", "lowest-carbon"]

COMPARE_QUERY = """
query Compare($request: PlacementRequestInput!, $profile: JobProfileInput!, $objective: SiteObjective!,
              $deadline: Float, $age: Float!) {
  compareSites(request: $request, profile: $profile, objective: $objective, deadlineHours: $deadline,
               maxFactAgeDays: $age) {
    __typename
    ... on ValidationError { field message }
    ... on SiteComparison {
      request objective deadlineHours choice
      sites { rank site capacity fits gpus model hosts bottleneckGbps speed runHours transferHours totalHours
              computeCost transferCost totalCost powerW powerSource energyKWh carbonKg meetsDeadline complete
              missing stale reason waitCoarse waitReason }
    }
  }
}
"""


def add_parsers(sub: Any, client_options: Any) -> None:
    sites = sub.add_parser("sites", help="list sites (on-prem, cloud regions) with their GPUs; `sites load FILE`")
    sites.add_argument("action", nargs="?", choices=["list", "load"], default="list", help="list (default) or load")
    sites.add_argument("file", nargs="?", type=Path, help="for load: a site catalogue, JSON (docs/sites.md)")
    client_options(sites)
    prices = sub.add_parser("prices", help="list cost facts, or load a price file (TOML or JSON)")
    prices.add_argument("action", choices=["list", "load"], help="list the facts, or load a file")
    prices.add_argument("file", nargs="?", type=Path, help="for load: e.g. graphsvc/sites/data/example-prices.toml")
    client_options(prices)
    cmp = sub.add_parser(
        "compare-sites",
        help='where a job is cheapest, fastest or greenest, e.g. compare-sites "64" --gpu-hours 6400',
        description="For each site: the best placement now, run time, cost, data transfer, energy and carbon.",
    )
    cmp.add_argument("request", help='the placement request in text form, e.g. "64xH100 per-host=8"')
    cmp.add_argument("--gpu-hours", type=float, required=True, help="GPU-hours at full speed on --reference-model")
    cmp.add_argument("--comm-share", type=float, default=0.0, help="share of step time in communication (0..1)")
    cmp.add_argument("--reference-model", help="the model --gpu-hours was measured on, e.g. H100")
    cmp.add_argument("--reference-gbps", type=float, default=50.0, help="per-GPU GB/s --comm-share was measured at")
    cmp.add_argument("--dataset-gb", type=float, default=0.0, help="dataset size, GB")
    cmp.add_argument("--data-site", help="the site where the dataset lives")
    cmp.add_argument("--objective", choices=OBJECTIVES, default="cheapest", help="what to rank by (default cheapest)")
    cmp.add_argument("--deadline-h", type=float, help="hours (for cheapest-under-deadline; shown for the others)")
    cmp.add_argument("--max-fact-age-days", type=float, default=365.0, help="older facts are named stale")
    client_options(cmp)


def run(args: argparse.Namespace) -> int:
    from graphsvc.cli import CLIError, _check_status, _graphql, _http

    if args.command == "sites":
        if args.action == "load":
            if args.file is None:
                raise CLIError("sites load: name the catalogue file")
            status, text = _http(args.server, "/v1/sites", _read(args.file), method="PUT")
            _check_status(args.server, status, text)
            print(f"{json.loads(text)['sites']} sites stored")
            return 0
        status, text = _http(args.server, "/v1/sites")
        _check_status(args.server, status, text)
        rows = json.loads(text)
        if args.output == "json":
            print(json.dumps(rows, indent=2))
            return 0
        for s in rows:
            gpus = ", ".join(f"{g['free']}/{g['gpus']} free {g['model']}" for g in s["gpus"]) or "no hosts"
            kinds = ",".join(s["capacity_kinds"]) or "-"
            print(f"{s['name']:<20} {s['kind']:<18} {kinds:<20} {gpus}")
        return 0
    if args.command == "prices":
        if args.action == "load":
            if args.file is None:
                raise CLIError("prices load: name the price file")
            status, text = _http(args.server, "/v1/prices", _read(args.file), method="PUT")
            _check_status(args.server, status, text)
            out = json.loads(text)
            print(f"catalog {out['catalog']}: {len(out['written'])} facts written, "
                  f"{len(out['kept_newer'])} kept (a later-dated fact is stored)")  # fmt: skip
            return 0
        facts = _graphql(args.server, "{ costFacts { key value unit source asOf note } }", {})["costFacts"]
        if args.output == "json":
            print(json.dumps(facts, indent=2))
        for f in facts if args.output != "json" else []:
            print(f"{f['key']:<50} {f['value']:>10g} {f['unit']:<14} {f['asOf']}  {f['source']}")
        return 0
    return _compare(args)


def _read(path: Path) -> dict[str, Any]:
    from graphsvc.cli import CLIError

    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise CLIError(f"cannot read {path}: {exc.strerror}") from None
    try:
        if path.suffix == ".toml":
            import tomllib

            data: dict[str, Any] = tomllib.loads(raw.decode())
        else:
            data = json.loads(raw)
    except ValueError as exc:
        raise CLIError(f"{path}: not valid {'TOML' if path.suffix == '.toml' else 'JSON'}: {exc}") from None
    return data


def _money(x: float | None) -> str:
    return "?" if x is None else f"${x:,.0f}"


def _hours(x: float | None) -> str:
    return "?" if x is None else f"{x:,.1f} h"


def _compare(args: argparse.Namespace) -> int:
    from graphsvc.cli import _graphql
    from graphsvc.client import request_input

    profile = {
        "gpuHours": args.gpu_hours,
        "commShare": args.comm_share,
        "referenceModel": args.reference_model,
        "referenceGbps": args.reference_gbps,
        "datasetGB": args.dataset_gb,
        "dataSite": args.data_site,
    }
    variables = {
        "request": request_input(args.request),
        "profile": profile,
        "objective": args.objective.upper().replace("-", "_"),
        "deadline": args.deadline_h,
        "age": args.max_fact_age_days,
    }
    out = _graphql(args.server, COMPARE_QUERY, variables)["compareSites"]
    if out["__typename"] == "ValidationError":
        from graphsvc.cli import CLIError

        raise CLIError(f"{out['field']}: {out['message']}")
    if args.output == "json":
        print(json.dumps(out, indent=2))
        return 0 if out["choice"] else 2
    deadline = f", deadline {out['deadlineHours']:g} h" if out["deadlineHours"] else ""
    print(f"{out['request']}: {args.objective}{deadline} -> {out['choice'] or 'no site satisfies it'}")
    for s in out["sites"]:
        print(f"#{s['rank']} {s['site']:<18} {s['capacity'] or '-':<10} {_hours(s['totalHours']):>10} "
              f"{_money(s['totalCost']):>12}  {s['reason']}")  # fmt: skip
        if s["fits"]:
            kg = "?" if s["carbonKg"] is None else f"{s['carbonKg']:,.0f} kg CO2e"
            print(f"     {s['gpus']}x {s['model']}, {s['bottleneckGbps']} GB/s; run {_hours(s['runHours'])}, "
                  f"data {_hours(s['transferHours'])} {_money(s['transferCost'])}; {kg}")  # fmt: skip
        if s.get("waitCoarse"):  # fewer wait searches than the bisection needs: the cost limit's
            print(f"     coarse wait: {s['waitReason']}")
        for m in s["missing"]:
            print(f"     missing: {m}")
        for m in s["stale"]:
            print(f"     stale: {m}")
    return 0 if out["choice"] else 2
