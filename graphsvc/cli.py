"""``graphsvc``: serve the API, run the demo, load synthetic clusters, migrate the graph."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from fastapi import FastAPI

from graphsvc.api.app import create_app
from graphsvc.client import RESERVE_MUTATION, request_input
from graphsvc.exports import drift_cli
from graphsvc.exports.names import EXPORT_FORMATS
from graphsvc.settings import Settings
from graphsvc.synthetic.clusters import Profile, SyntheticCluster, build

log = logging.getLogger("graphsvc")


def _store_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--store",
        help="'embedded' (default), falkordb://host:port, a neo4j:// / bolt:// URI, or (demo only) 'neo4j': "
        "a local Neo4j 5 server started from tools/neo4j-local (jars: scripts/neo4j-jars.sh)",
    )
    p.add_argument("--data-dir", type=Path, help="embedded store data directory (default ./.graphsvc)")
    p.add_argument("--graph", help="graph name inside the store (default 'topology')")


def _serve_options(p: argparse.ArgumentParser) -> None:
    _store_options(p)
    p.add_argument("--host", help="listen address (default 127.0.0.1)")
    p.add_argument("--port", type=int, help="listen port (default 8000)")
    p.add_argument("--insecure-dev", action="store_true", help="no authentication: every caller is an operator")
    p.add_argument("--tokens-file", type=Path, help="JSON list of hashed tokens (see `graphsvc token create`)")
    p.add_argument("--tls-cert", type=Path, help="serve HTTPS with this certificate (PEM)")
    p.add_argument("--tls-key", type=Path, help="... and this private key (PEM)")


def _settings(args: argparse.Namespace) -> Settings:
    overrides: dict[str, Any] = {
        k: v
        for k, v in {
            "store": getattr(args, "store", None),
            "data_dir": getattr(args, "data_dir", None),
            "graph": getattr(args, "graph", None),
            "host": getattr(args, "host", None),
            "port": getattr(args, "port", None),
            "insecure_dev": True if getattr(args, "insecure_dev", False) else None,
            "tokens_file": getattr(args, "tokens_file", None),
            "tls_certfile": getattr(args, "tls_cert", None),
            "tls_keyfile": getattr(args, "tls_key", None),
        }.items()
        if v is not None
    }
    return Settings(**overrides)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="graphsvc", description=__doc__)
    parser.add_argument("--log-level", default=os.environ.get("GRAPHSVC_LOG_LEVEL", "info"))
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="run the API (embedded store by default)")
    _serve_options(serve)

    demo = sub.add_parser("demo", help="serve and load a mixed demo cluster (>= 1,000 GPUs)")
    _serve_options(demo)
    demo.add_argument("--profile", default="demo", help="synthetic profile, e.g. demo or superpod-h100:sus=2")

    load = sub.add_parser("load", help="push a synthetic cluster to a running service")
    load.add_argument("profile", help="e.g. demo, superpod-h100:sus=4, nvl72:racks=2, sized:gpus=100000")
    load.add_argument("--server", default="http://127.0.0.1:8000")
    load.add_argument("--cluster", default="default")

    place = sub.add_parser("place", help='ask a running service where a job fits, e.g. "8xH100 nvlink=full-mesh"')
    place.add_argument("request", help="the compact text form: COUNTxMODEL then options (see docs/placement.md)")
    place.add_argument("--server", default="http://127.0.0.1:8000")
    place.add_argument("--json", action="store_true", help="print the GraphQL result as JSON")

    reserve = sub.add_parser("reserve", help='hold GPUs for a job, e.g. reserve "8xH100 nvlink=full-mesh" --holder j1')
    reserve.add_argument("request", help="the compact text form, as for `place`")
    reserve.add_argument("--holder", required=True)
    reserve.add_argument("--ttl", default="10m", help="lease, e.g. 90s, 10m, 2h (default 10m)")
    reserve.add_argument("--key", help="idempotency key: retrying with it returns the same reservation")
    reserve.add_argument("--priority", type=int, default=0)
    reserve.add_argument("--preemptible", action="store_true")
    reserve.add_argument("--allow-preemption", action="store_true")
    reserve.add_argument("--server", default="http://127.0.0.1:8000")

    exp = sub.add_parser("export", help="the topology for Slurm, Kueue, Volcano or NCCL, from a running service")
    exp.add_argument("format", choices=EXPORT_FORMATS)
    exp.add_argument("--cluster", default="default")
    exp.add_argument("--host", help="the host, for the per-host nccl export and an nfd features.d file")
    exp.add_argument("--server", default="http://127.0.0.1:8000")

    release = sub.add_parser("release", help="free a reservation's GPUs now")
    release.add_argument("id")
    release.add_argument("--server", default="http://127.0.0.1:8000")

    reset_host = sub.add_parser(
        "reset-host", help="operators: forget a host's collection times so its next update applies (bad clock)"
    )
    reset_host.add_argument("host")
    reset_host.add_argument("--server", default="http://127.0.0.1:8000")

    export = sub.add_parser("export-schema", help="write the GraphQL schema (SDL) to a file or stdout")
    export.add_argument("out", nargs="?", type=Path)

    bench = sub.add_parser("bench", help="replay a job trace against scheduler baselines (a benchmark)")
    bench.add_argument("what", choices=["placement"])
    bench.add_argument("--trace", default="generated", help="'generated' (LLM-like, seeded) or the Alibaba pods CSV")
    bench.add_argument("--cluster", default="superpod-h100:sus=4", help="synthetic profile to load")
    bench.add_argument("--policy", default=",".join(["service", "first-fit", "slurm-tree", "kueue-bestfit"]))
    bench.add_argument("--jobs", type=int, default=300)
    bench.add_argument("--seed", type=int, default=7)
    bench.add_argument("--server", help="replay against this running service (it must hold the cluster)")

    token = sub.add_parser("token", help="create an API token (prints it once, and the hashed entry to store)")
    token.add_argument("action", choices=["create"])
    token.add_argument("--name", required=True)
    token.add_argument("--role", required=True, choices=["collector", "scheduler", "operator"])
    token.add_argument(
        "--hosts", default="", help="collector tokens: host names or patterns it may write, comma-separated"
    )
    token.add_argument("--expires", help="the token stops working after this long, e.g. 90d, 12h (default: never)")

    migrate = sub.add_parser("migrate", help="bring the stored graph to this version and exit")
    _store_options(migrate)

    drift_cli.add_parser(sub)  # `graphsvc drift FORMAT FILE` (graphsvc/exports/drift_cli.py)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(
        level=args.log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s %(message)s",
        stream=sys.stderr,
    )
    logging.getLogger("httpx").setLevel(logging.WARNING)
    try:
        if args.command == "demo":
            os.environ.setdefault("GRAPHSVC_DEV_MODE", "true")
            if args.tokens_file is not None or os.environ.get("GRAPHSVC_TOKENS"):
                # Tokens given: the demo authenticates with them (it loads its cluster with a
                # one-off operator token of its own, revoked once the cluster is in).
                log.warning("demo: authentication on, tokens from %s", args.tokens_file or "GRAPHSVC_TOKENS")
            else:
                os.environ["GRAPHSVC_INSECURE_DEV"] = "true"
                log.warning("=" * 72)
                log.warning("INSECURE DEV MODE: no authentication, every caller is an operator. Demo only.")
                log.warning("=" * 72)
        if args.command == "token":
            from graphsvc.security.auth import Role, new_token

            expires = time.time() + _seconds(args.expires) if args.expires else None
            secret, entry = new_token(args.name, Role(args.role), [h for h in args.hosts.split(",") if h], expires)
            print(f"token (shown once, give it to {args.name}): {secret}")
            print(f"entry for the tokens file (a JSON list): {json.dumps(entry)}")
            return 0
        if args.command == "serve":
            asyncio.run(_serve(_settings(args)))
        elif args.command == "demo":
            with _local_neo4j_if_asked(args):
                asyncio.run(_demo(_settings(args), args.profile))
        elif args.command == "load":
            cluster = build(args.profile, cluster=args.cluster)
            asyncio.run(push_cluster(args.server, cluster))
        elif args.command == "place":
            return asyncio.run(_place(args.server, args.request, as_json=args.json))
        elif args.command == "bench":
            from graphsvc.bench.run import bench as run_bench

            report = asyncio.run(
                run_bench(
                    args.cluster,
                    args.trace,
                    [p.strip() for p in args.policy.split(",")],
                    args.jobs,
                    args.seed,
                    args.server,
                )
            )
            print(json.dumps(report, indent=1))
        elif args.command == "reserve":
            return asyncio.run(_reserve(args))
        elif args.command == "export":
            params = {"cluster": args.cluster, **({"host": args.host} if args.host else {})}
            resp = httpx.get(
                f"{args.server}/v1/export/{args.format}", params=params, timeout=300, headers=_auth_headers()
            )
            if resp.status_code != 200:
                raise RuntimeError(f"HTTP {resp.status_code}: {resp.text[:500]}")
            print(resp.text, end="")
        elif args.command == "release":
            return asyncio.run(_release(args.server, args.id))
        elif args.command == "reset-host":
            return asyncio.run(_reset_host(args.server, args.host))
        elif args.command == "export-schema":
            from graphsvc.api.graphql.schema import schema

            text = schema.as_str() + "\n"
            if args.out:
                args.out.write_text(text)
            else:
                print(text, end="")
        elif args.command == "migrate":
            asyncio.run(_migrate(_settings(args)))
        elif args.command == "drift":
            return drift_cli.run(args)  # 0 no drift, 1 drift, 2 could not check
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        log.debug("failed", exc_info=True)
        print(f"graphsvc: error: {exc}", file=sys.stderr)
        return 1
    return 0


def _auth_headers() -> dict[str, str]:
    """Client commands authenticate with GRAPHSVC_TOKEN when it is set."""
    token = os.environ.get("GRAPHSVC_TOKEN")
    return {"authorization": f"Bearer {token}"} if token else {}


def _server(settings: Settings) -> uvicorn.Server:
    if not settings.insecure_dev and settings.tokens_file is None and not settings.tokens:
        raise RuntimeError(
            "no API tokens configured: give --tokens-file (see `graphsvc token create`) or GRAPHSVC_TOKENS, "
            "or run with --insecure-dev on a trusted machine"
        )
    if settings.insecure_dev:
        log.warning("INSECURE DEV MODE: no authentication, every caller is an operator")
    app = create_app(settings)
    config = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        log_config=None,
        access_log=False,
        lifespan="on",
        ssl_certfile=str(settings.tls_certfile) if settings.tls_certfile else None,
        ssl_keyfile=str(settings.tls_keyfile) if settings.tls_keyfile else None,
    )
    return uvicorn.Server(config)


async def _serve(settings: Settings) -> None:
    server = _server(settings)
    await server.serve()
    if not server.started:
        raise RuntimeError("the service did not start; see the log above")


@contextlib.contextmanager
def _local_neo4j_if_asked(args: argparse.Namespace) -> Iterator[None]:
    """`demo --store neo4j`: run the demo on the project's local Neo4j 5 server (tools/neo4j-local).

    The server keeps its data under DATA_DIR/neo4j and stops (cleanly) with the demo.
    """
    if getattr(args, "store", None) != "neo4j":
        yield
        return
    from graphsvc.store.neo4j_local import LocalNeo4j

    data_dir = (args.data_dir or Path(".graphsvc")) / "neo4j"
    server = LocalNeo4j(data_dir, password=os.environ.get("GRAPHSVC_NEO4J_PASSWORD") or "graphsvc-demo")
    print(f"starting a local Neo4j 5 server (data in {data_dir}) ...", file=sys.stderr)
    server.start()
    print(f"local Neo4j ready at {server.uri} (user neo4j, password {server.password})", file=sys.stderr)
    args.store = server.uri
    os.environ["GRAPHSVC_NEO4J_PASSWORD"] = server.password
    try:
        yield
    finally:
        server.stop()


async def _demo(settings: Settings, profile: str) -> None:
    cluster = build(Profile.parse(profile))
    server = _server(settings)
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            await task
            raise RuntimeError("the service did not start; see the log above")
        await asyncio.sleep(0.05)
    url = f"http://{settings.host}:{settings.port}"
    loader: str | None = None
    app = server.config.app
    assert isinstance(app, FastAPI)
    tokens = app.state.tokens
    if not settings.insecure_dev:
        from graphsvc.security.auth import Role, new_token

        loader, entry = new_token("demo-loader", Role.OPERATOR)  # in memory only, never printed
        loader_sha = tokens.add(entry)
    try:
        await push_cluster(url, cluster, token=loader)
        print(f"graphsvc demo: ready at {url} (try {url}/healthz); Ctrl-C to stop", file=sys.stderr)
    except Exception:
        server.should_exit = True
        await task
        raise
    finally:
        if loader is not None:
            tokens.revoke(loader_sha)
    await task


async def push_cluster(url: str, cluster: SyntheticCluster, *, concurrency: int = 8, token: str | None = None) -> None:
    """Send every host's facts, then the fabric, through the public ingest API, with progress."""
    total = len(cluster.hosts)
    print(
        f"loading {total} hosts / {cluster.gpu_count} GPUs "
        + ", ".join(f"{n} {m}" for m, n in sorted(cluster.gpus_by_model().items())),
        file=sys.stderr,
    )
    started = time.monotonic()
    done = gpus = 0
    last = 0.0
    queue: asyncio.Queue[int] = asyncio.Queue()
    for i in range(total):
        queue.put_nowait(i)

    headers = {"authorization": f"Bearer {token}"} if token else _auth_headers()
    async with httpx.AsyncClient(base_url=url, timeout=120, headers=headers) as client:

        async def worker() -> None:
            nonlocal done, gpus, last
            while not queue.empty():
                host = cluster.hosts[queue.get_nowait()]
                resp = await client.put(
                    f"/v1/hosts/{host.hostname}/facts",
                    content=host.model_dump_json(),
                    headers={"content-type": "application/json"},
                )
                if resp.status_code != 200:
                    raise RuntimeError(f"host {host.hostname}: HTTP {resp.status_code}: {resp.text[:500]}")
                done += 1
                gpus += len(host.gpus)
                now = time.monotonic()
                if now - last > 1.0 or done == total:
                    last = now
                    print(f"  hosts {done}/{total}  GPUs {gpus}  {now - started:.1f}s", file=sys.stderr)

        await asyncio.gather(*(worker() for _ in range(concurrency)))
        resp = await client.put(
            "/v1/fabric",
            content=cluster.fabric().model_dump_json(),
            headers={"content-type": "application/json"},
        )
        if resp.status_code != 200:
            raise RuntimeError(f"fabric: HTTP {resp.status_code}: {resp.text[:500]}")
        fabric = resp.json()
        print(
            f"  fabric: {fabric['switches']} switches, {fabric['links']} links; "
            f"done in {time.monotonic() - started:.1f}s",
            file=sys.stderr,
        )


PLACE_QUERY = """
query Place($text: String!) {
  placementText(text: $text) {
    request searchedUnits elapsedMs
    candidates { rank score bottleneckGbps maxIbHops asOf reason
                 fragmentation { largestFreeBlockBefore largestFreeBlockAfter }
                 hosts { name } gpus { uuid index host { name } } }
    infeasible { constraint message nearestFeasible }
  }
}
"""


async def _place(server: str, text: str, *, as_json: bool) -> int:
    import json

    async with httpx.AsyncClient(base_url=server, timeout=60, headers=_auth_headers()) as client:
        resp = await client.post("/graphql", json={"query": PLACE_QUERY, "variables": {"text": text}})
    body = resp.json()
    if resp.status_code != 200 or body.get("errors"):
        raise RuntimeError(f"the service answered HTTP {resp.status_code}: {json.dumps(body)[:500]}")
    result = body["data"]["placementText"]
    if as_json:
        print(json.dumps(result, indent=2))
        return 0 if result["candidates"] else 2
    print(f"{result['request']}  ({result['searchedUnits']} units read, {result['elapsedMs']:.1f} ms)")
    for c in result["candidates"]:
        gpus = ", ".join(f"{g['host']['name']}:{g['index']}" for g in c["gpus"][:16])
        more = " ..." if len(c["gpus"]) > 16 else ""
        print(f"#{c['rank']} score {c['score']}  bottleneck {c['bottleneckGbps']} GB/s  hops {c['maxIbHops']}")
        print(f"   GPUs: {gpus}{more}")
        print(f"   {c['reason']}")
    for r in result["infeasible"]:
        nearest = f"  nearest feasible: {r['nearestFeasible']}" if r["nearestFeasible"] else ""
        print(f"infeasible [{r['constraint']}]: {r['message']}{nearest}")
    return 0 if result["candidates"] else 2


def _seconds(text: str) -> int:
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400}
    text = text.strip().lower()
    if text[-1:] in units:
        return int(float(text[:-1]) * units[text[-1]])
    return int(float(text))


async def _graphql(server: str, query: str, variables: dict[str, object]) -> dict[str, object]:
    import json

    async with httpx.AsyncClient(base_url=server, timeout=60, headers=_auth_headers()) as client:
        resp = await client.post("/graphql", json={"query": query, "variables": variables})
    body = resp.json()
    if resp.status_code != 200 or body.get("errors"):
        raise RuntimeError(f"the service answered HTTP {resp.status_code}: {json.dumps(body)[:500]}")
    data: dict[str, object] = body["data"]
    return data


async def _reserve(args: argparse.Namespace) -> int:
    request = request_input(args.request)  # the parser's words on bad input, before calling the service
    variables: dict[str, object] = {
        "input": {
            "holder": args.holder,
            "request": request,
            "ttlSeconds": _seconds(args.ttl),
            "idempotencyKey": args.key,
            "priority": args.priority,
            "preemptible": args.preemptible,
            "allowPreemption": args.allow_preemption,
        }
    }
    out = (await _graphql(args.server, RESERVE_MUTATION, variables))["reserve"]
    assert isinstance(out, dict)
    kind = out["__typename"]
    if kind == "Reservation":
        gpus = ", ".join(f"{g['host']['name']}:{g['index']}" for g in out["gpus"])
        print(f"{out['id']}  holder {out['holder']}  expires {out['expiresAt']:.0f}  GPUs: {gpus}")
        return 0
    if kind == "Conflict":
        print(f"conflict: {out['message']}")
    elif kind == "Infeasible":
        for r in out["reasons"]:
            nearest = f"  nearest feasible: {r['nearestFeasible']}" if r["nearestFeasible"] else ""
            print(f"infeasible [{r['constraint']}]: {r['message']}{nearest}")
    elif kind == "IdempotencyKeyMismatch":
        print(f"idempotency key mismatch: {out['message']}")
    else:
        print(f"invalid [{out['field']}]: {out['message']}")
    return 2


async def _release(server: str, reservation_id: str) -> int:
    query = (
        "mutation($id: String!) { release(id: $id) { __typename "
        "... on Reservation { id state } ... on NotFound { message } } }"
    )
    out = (await _graphql(server, query, {"id": reservation_id}))["release"]
    assert isinstance(out, dict)
    if out["__typename"] == "NotFound":
        print(out["message"])
        return 2
    print(f"{out['id']}: {out['state']}")
    return 0


async def _reset_host(server: str, host: str) -> int:
    query = (
        "mutation($host: String!) { resetHostFreshness(host: $host) { __typename "
        "... on HostFreshnessReset { host previousCollectedAt } ... on NotFound { message } } }"
    )
    out = (await _graphql(server, query, {"host": host}))["resetHostFreshness"]
    assert isinstance(out, dict)
    if out["__typename"] == "NotFound":
        print(out["message"])
        return 2
    print(f"{out['host']}: collection times reset (collected_at was {out['previousCollectedAt']})")
    return 0


async def _migrate(settings: Settings) -> None:
    from graphsvc.store.factory import open_store
    from graphsvc.store.migrate import stored_version

    async with open_store(settings) as gw:
        print(f"graph version {await stored_version(gw)} ({gw.kind})", file=sys.stderr)


if __name__ == "__main__":
    raise SystemExit(main())
