"""``graphsvc drift slurm|kueue|volcano|labels FILE``: the deployed copy vs the running service's graph.

Exit codes, for a CI job or a cron: 0 no drift, 1 drift (each difference printed), 2 the
check could not be made (unreadable file, unknown cluster, service unreachable).
Node lists (``kubectl get nodes -o yaml``) are cut down to names and labels before sending:
a large cluster's full Node objects would exceed the request size limit.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from graphsvc.exports.names import DRIFT_FORMATS

DRIFT_QUERY = """
query Drift($format: DriftFormat!, $deployed: String!, $cluster: String!) {
  drift(format: $format, deployed: $deployed, cluster: $cluster) {
    __typename
    ... on DriftReport { drifted graphVersion factsAsOf
                         entries { kind change name expected deployed message } counts { what count } }
    ... on DriftInputInvalid { message }
    ... on DriftClusterNotFound { message }
  }
}
"""


def add_parser(sub: Any) -> None:
    p = sub.add_parser("drift", help="compare a deployed scheduler copy with the graph; exit 1 on drift")
    p.add_argument("format", choices=DRIFT_FORMATS, help="which scheduler's copy the file is")
    p.add_argument("file", type=Path, help="topology.conf/topology.yaml, Kueue Topology, HyperNodes or a Node list")
    p.add_argument("--cluster", default="default", help="cluster name (default 'default')")
    p.add_argument(  # None: graphsvc.cli fills in $GRAPHSVC_URL or the default, as for every client command
        "--server", metavar="URL", help="the service's base URL (default: $GRAPHSVC_URL, else http://127.0.0.1:8000)"
    )
    p.add_argument("--json", action="store_true", help="print the report as JSON")


def slim(fmt: str, text: str) -> str:
    """Node objects reduced to kind, name and labels; anything unparsable is sent as it is."""
    if fmt not in ("labels", "kueue") or text.lstrip().startswith(("#", "kubectl")):
        return text
    import yaml  # only here: the CLI starts without it

    try:
        docs = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError:
        return text
    items: list[Any] = []
    for d in docs:
        items += d["items"] if isinstance(d, dict) and isinstance(d.get("items"), list) else [d]
    out = []
    for item in items:
        if isinstance(item, dict) and item.get("kind") == "Node":
            meta = item.get("metadata") or {}
            out.append({"kind": "Node", "metadata": {"name": meta.get("name"), "labels": meta.get("labels") or {}}})
        else:
            out.append(item)
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": out})


def _post(url: str, payload: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """POST JSON with the standard library (the CLI does not import an HTTP client to start)."""
    import urllib.error
    import urllib.request

    token = os.environ.get("GRAPHSVC_TOKEN")
    headers = {"content-type": "application/json", **({"authorization": f"Bearer {token}"} if token else {})}
    req = urllib.request.Request(url, data=json.dumps(payload).encode(), headers=headers, method="POST")  # noqa: S310
    try:
        with urllib.request.urlopen(req, timeout=300) as resp:  # noqa: S310 - the URL is the operator's --server
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")


def run(args: argparse.Namespace) -> int:
    try:
        text = args.file.read_text()
        variables = {"format": args.format.upper(), "deployed": slim(args.format, text), "cluster": args.cluster}
        status, body = _post(f"{args.server}/graphql", {"query": DRIFT_QUERY, "variables": variables})
        if status != 200 or body.get("errors"):
            raise RuntimeError(f"the service answered HTTP {status}: {json.dumps(body)[:500]}")
    except (OSError, RuntimeError, ValueError) as exc:
        print(f"graphsvc drift: {exc}", file=sys.stderr)
        return 2
    out = body["data"]["drift"]
    if args.json:
        print(json.dumps(out, indent=2))
    if out["__typename"] != "DriftReport":
        if not args.json:
            print(f"graphsvc drift: {out['message']}", file=sys.stderr)
        return 2
    if not args.json:
        if not out["drifted"]:
            print(f"no drift: {args.file} matches the graph (graph version {out['graphVersion']})")
        for e in out["entries"]:
            print(f"{e['kind']:12} {e['change']:8} {e['message']}")
        if out["counts"]:
            print("; ".join(f"{c['count']} {c['what']}" for c in out["counts"]))
    return 1 if out["drifted"] else 0
