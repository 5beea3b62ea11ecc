"""``graphsvc``: serve the API, run the demo, load synthetic clusters, migrate the graph.

Start-up matters for a command people type: the module imports only the standard library at
the top, and each command imports what it needs (the server stack for `serve`/`demo`); client
commands talk HTTP with urllib, as importing httpx alone costs ~0.3 s.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import select
import signal
import sys
import threading
import time
from collections.abc import Callable, Coroutine, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from graphsvc import elastic_cli  # standard library only at import time
from graphsvc.exports import drift_cli  # standard library only, like graphsvc.exports.names
from graphsvc.exports.names import EXPORT_FORMATS
from graphsvc.placement.shape_keys import is_shaped  # standard library only
from graphsvc.sites import cli as sites_cli  # standard library only at import

if TYPE_CHECKING:
    import asyncio

    import httpx
    import uvicorn
    from topo_facts.models import HostFacts

    from graphsvc.security.auth import TokenStore
    from graphsvc.settings import Settings
    from graphsvc.synthetic.clusters import SyntheticCluster

log = logging.getLogger("graphsvc")
DEFAULT_URL = "http://127.0.0.1:8000"
SERVER_HELP = (
    f"the service's base URL (default: $GRAPHSVC_URL, else {DEFAULT_URL}); the API token comes from $GRAPHSVC_TOKEN"
)


class CLIError(Exception):
    """An expected failure: printed as one line, naming what went wrong and the fix."""


class Terminated(BaseException):
    """SIGTERM, raised where the main thread is so that every `finally` on the way out runs."""


def _client_options(p: argparse.ArgumentParser, *, output: bool = True) -> None:
    p.add_argument("--server", metavar="URL", help=SERVER_HELP)
    if output:
        p.add_argument(
            "--output",
            "-o",
            choices=["table", "json"],
            default="table",
            help="table for people (default), json for scripts",
        )


def _ttl(text: str) -> int:
    """argparse type for --ttl: 90, 90s, 10m, 2h, 1d."""
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400}
    raw = text.strip().lower()
    unit = units.get(raw[-1:], 1)
    number = raw[:-1] if raw[-1:] in units else raw
    try:
        seconds = int(float(number) * unit)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a duration: give seconds or a number with s, m, h or d (90s, 10m, 2h, 1d)"
        ) from None
    if seconds <= 0:
        raise argparse.ArgumentTypeError(f"{text!r}: a lease must last at least one second")
    if seconds > 2**31 - 1:  # GraphQL's Int: the service would refuse the query, not the lease
        raise argparse.ArgumentTypeError(f"{text!r} is longer than any lease the service grants")
    return seconds


def human_time(epoch: float, now: float | None = None) -> str:
    """An absolute UTC time and how far away it is: '2026-11-30 12:10:00 UTC (in 9m 58s)'."""
    now = time.time() if now is None else now
    stamp = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(epoch))
    delta = abs(epoch - now)
    d, rest = divmod(round(delta), 86400)
    h, rest = divmod(rest, 3600)
    m, sec = divmod(rest, 60)
    parts = [f"{v}{u}" for v, u in ((d, "d"), (h, "h"), (m, "m"), (sec, "s")) if v][:2] or ["0s"]
    span = " ".join(parts)
    return f"{stamp} (in {span})" if epoch >= now else f"{stamp} ({span} ago)"


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
    p.add_argument("--port", type=int, help="listen port (default 8000; 0: a free one the kernel picks)")
    p.add_argument(
        "--port-file", type=Path, help="write the port it listens on to this file once it does (for --port 0)"
    )
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
            "port_file": getattr(args, "port_file", None),
            "insecure_dev": True if getattr(args, "insecure_dev", False) else None,
            "tokens_file": getattr(args, "tokens_file", None),
            "tls_certfile": getattr(args, "tls_cert", None),
            "tls_keyfile": getattr(args, "tls_key", None),
        }.items()
        if v is not None
    }
    from graphsvc.settings import Settings

    return Settings(**overrides)


PLACE_EPILOG = """\
request: a GPU count, optionally with a model (8, 8xH100, 64xGB200), then options:
{options}

examples:
  graphsvc place "8xH100 nvlink=full-mesh ib-hops<=1"
  graphsvc place "16xH100 per-host=8 rail-aligned" --output json
  GRAPHSVC_URL=http://graphsvc:8000 graphsvc place "72xGB200 same-domain"

shaped jobs (TP groups inside NVLink domains; the rank map and launch files in the answer):
  graphsvc place "tp=8 pp=2 dp=4 model=H100"
  graphsvc place "groups=8 group-size=8 group-in=nvlink-domain job-in=scalable-unit spread=leaves"
  keys: tp pp dp groups group-size model mem>= group-in= job-in= (tier[:required|:preferred];
  tiers nvlink-domain host leaf scalable-unit pod cluster) spread=leaves exclude= allow-unhealthy

exit status: 0 placed, 2 infeasible (the reasons and the nearest feasible request are printed),
1 error (the service could not be reached or refused the request).
"""


def _request_options_help() -> str:
    from graphsvc.placement.options import OPTIONS  # no pydantic: --help stays fast

    return "\n".join(f"  {name:<18}{text}" for name, text in OPTIONS.items())


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="graphsvc",
        description="graphsvc: serve the API, run the demo, load synthetic clusters, place and reserve GPUs.",
    )
    parser.add_argument(
        "--log-level",
        default=os.environ.get("GRAPHSVC_LOG_LEVEL", "info"),
        choices=["debug", "info", "warning", "error"],
        type=str.lower,
        help="log verbosity (default: $GRAPHSVC_LOG_LEVEL, else info)",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    raw = argparse.RawDescriptionHelpFormatter

    serve = sub.add_parser("serve", help="run the API (embedded store by default)")
    _serve_options(serve)

    demo = sub.add_parser("demo", help="serve and load a mixed demo cluster (>= 1,000 GPUs)")
    _serve_options(demo)
    demo.add_argument(
        "--profile",
        default="demo",
        help="synthetic profile, e.g. demo or superpod-h100:sus=2; multisite: on-prem + two clouds (docs/sites.md)",
    )

    load = sub.add_parser("load", help="push a synthetic cluster to a running service")
    load.add_argument("profile", help="e.g. demo, superpod-h100:sus=4, nvl72:racks=2, sized:gpus=100000")
    _client_options(load, output=False)
    load.add_argument("--cluster", default="default", help="cluster name to load into (default 'default')")

    request_help = "the compact text form: COUNT[xMODEL] then options (listed below)"
    place = sub.add_parser(
        "place",
        help='ask a running service where a job fits, e.g. "8xH100 nvlink=full-mesh"',
        description="Ask a running service where a job would run well; changes nothing.",
        epilog=PLACE_EPILOG.format(options=_request_options_help()),
        formatter_class=raw,
    )
    place.add_argument("request", help=request_help)
    _client_options(place)
    place.add_argument("--json", action="store_true", help="same as --output json")

    reserve = sub.add_parser(
        "reserve",
        help='hold GPUs for a job, e.g. reserve "8xH100 nvlink=full-mesh" --holder j1',
        description="Place and hold the GPUs atomically, under a lease that runs out unless renewed.",
        epilog=PLACE_EPILOG.format(options=_request_options_help()).replace("graphsvc place", "graphsvc reserve"),
        formatter_class=raw,
    )
    reserve.add_argument("request", help=request_help)
    reserve.add_argument("--holder", required=True, help="who holds the GPUs (a job or user name)")
    reserve.add_argument("--ttl", default="10m", type=_ttl, help="lease, e.g. 90s, 10m, 2h, 1d (default 10m)")
    reserve.add_argument("--key", help="idempotency key: retrying with it returns the same reservation")
    reserve.add_argument("--priority", type=int, default=0, help="higher may preempt lower (default 0)")
    reserve.add_argument("--preemptible", action="store_true", help="a higher priority may take these GPUs")
    reserve.add_argument("--allow-preemption", action="store_true", help="may displace preemptible reservations")
    _client_options(reserve)

    exp = sub.add_parser("export", help="the topology for Slurm, Kueue, Volcano or NCCL, from a running service")
    exp.add_argument(
        "format",
        choices=EXPORT_FORMATS,
        help="what to write (docs/integrations.md)",
    )
    exp.add_argument("--cluster", default=None, help="cluster name (default 'default'; for nccl, the host's)")
    exp.add_argument("--host", help="the host, for the per-host nccl export and an nfd features.d file")
    _client_options(exp, output=False)

    release = sub.add_parser("release", help="free a reservation's GPUs now")
    release.add_argument("id", help="the reservation id (rsv-...)")
    _client_options(release)

    renew = sub.add_parser("renew", help="extend a reservation's lease from now, e.g. renew rsv-... --ttl 30m")
    renew.add_argument("id", help="the reservation id (rsv-...)")
    renew.add_argument("--ttl", type=_ttl, help="the new lease, e.g. 90s, 10m, 2h (default: the lease last granted)")
    _client_options(renew)

    show = sub.add_parser("reservation", help="one reservation: its state, lease and GPUs with their health")
    show.add_argument("id", help="the reservation id (rsv-...)")
    _client_options(show)

    reset_host = sub.add_parser(
        "reset-host", help="operators: forget a host's collection times so its next update applies (bad clock)"
    )
    reset_host.add_argument("host", help="the host's name")
    _client_options(reset_host, output=False)

    remove_host = sub.add_parser(
        "remove-host", help="operators: decommission a host (it and its GPUs, NICs, cables); refused while reserved"
    )
    remove_host.add_argument("host", help="the host's name")
    _client_options(remove_host, output=False)

    export = sub.add_parser("export-schema", help="write the GraphQL schema (SDL) to a file or stdout")
    export.add_argument("out", nargs="?", type=Path, help="file to write (default: stdout)")

    bench = sub.add_parser("bench", help="replay a job trace against scheduler baselines (a benchmark)")
    bench.add_argument("what", choices=["placement"], help="what to benchmark (placement: a trace replay)")
    bench.add_argument(
        "--trace",
        default="generated",
        help="'generated' (LLM-like), 'shaped[:load=0.8,large=0.5]' (seeded) or the Alibaba pods CSV",
    )
    bench.add_argument("--cluster", default="superpod-h100:sus=4", help="synthetic profile to load")
    bench.add_argument(
        "--policy",
        default=",".join(["service", "lookahead", "first-fit", "slurm-tree", "kueue-bestfit"]),
        help="comma-separated policies to compare (default: all five)",
    )
    bench.add_argument("--jobs", type=int, default=300, help="jobs to replay (default 300)")
    bench.add_argument(
        "--seeds",
        default="1,2,3,4,5",
        help="comma-separated seeds (trace draws; for the Alibaba CSV, consecutive windows); default 1-5",
    )
    bench.add_argument("--server", help="replay against this running service (it must hold the cluster)")

    token = sub.add_parser("token", help="create an API token (prints it once, and the hashed entry to store)")
    token.add_argument("action", choices=["create"], help="create: a new token")
    token.add_argument("--name", required=True, help="who or what the token is for (shown in logs)")
    token.add_argument(
        "--role",
        required=True,
        choices=["collector", "scheduler", "operator"],
        help="collector: write its hosts' facts; scheduler: place and reserve; operator: everything",
    )
    token.add_argument(
        "--hosts", default="", help="collector tokens: host names or patterns it may write, comma-separated"
    )
    token.add_argument(
        "--expires", type=_ttl, help="the token stops working after this long, e.g. 90d, 12h (default: never)"
    )

    migrate = sub.add_parser("migrate", help="bring the stored graph to this version and exit")
    _store_options(migrate)

    drift_cli.add_parser(sub)  # `graphsvc drift FORMAT FILE` (graphsvc/exports/drift_cli.py)
    sites_cli.add_parsers(sub, _client_options)  # `graphsvc sites | prices | compare-sites` (graphsvc/sites/cli.py)
    elastic_cli.add_parsers(sub, _ttl)  # resize, preempt, next-phase, replace (graphsvc/elastic_cli.py)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    from graphsvc import logs

    logs.configure(args.log_level)
    if getattr(args, "server", None) is None and args.command != "bench":
        args.server = os.environ.get("GRAPHSVC_URL") or DEFAULT_URL
    if getattr(args, "json", False):
        args.output = "json"
    try:
        status = _run(args)
        sys.stdout.flush()  # a reader that closed the pipe is met here, not in the interpreter's exit
        return status
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError as exc:
        return _broken_pipe(exc)
    except CLIError as exc:
        print(f"graphsvc: error: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:
        log.debug("failed", exc_info=True)
        print(f"graphsvc: error: {exc}", file=sys.stderr)
        return 1


def _broken_pipe(exc: BrokenPipeError) -> int:
    """`graphsvc place … | head`: the reader has what it wanted, so end quietly, as a filter
    killed by SIGPIPE would (status 141). Any later write to stdout, the interpreter's own flush
    at exit included, goes to /dev/null (the Python docs' recipe for SIGPIPE). A broken pipe
    elsewhere (a socket) is an error like any other."""
    if not _stdout_closed():
        print(f"graphsvc: error: {exc}", file=sys.stderr)
        return 1
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    return 128 + signal.SIGPIPE


def _stdout_closed() -> bool:
    """Whether stdout is a pipe with no reader left (the kernel reports POLLERR for it)."""
    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(events & select.POLLERR for _, events in poller.poll(0))
    except (AttributeError, OSError, ValueError):  # no poll() here, or no stdout to ask about
        return True


@contextlib.contextmanager
def _stopping_on_sigterm() -> Iterator[None]:
    """SIGTERM runs our `finally` blocks (the demo's local Neo4j is stopped in one), then the
    process dies by it. Why: uvicorn catches SIGTERM, shuts down, then raises it again to die by
    it; with the default disposition that killed us at once, before those blocks ran, and the
    local Neo4j (its own session, so no signal reached it) lived on with its port and data."""
    if threading.current_thread() is not threading.main_thread():  # only it may set handlers
        yield
        return
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    except Terminated:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.raise_signal(signal.SIGTERM)  # dies here, as a service stopped by SIGTERM is expected to
        raise
    finally:
        signal.signal(signal.SIGTERM, previous)


def _raise_terminated(signum: int, frame: object) -> None:
    raise Terminated(signum)


def _run(args: argparse.Namespace) -> int:
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

        expires = time.time() + args.expires if args.expires else None
        secret, entry = new_token(args.name, Role(args.role), [h for h in args.hosts.split(",") if h], expires)
        print(f"token (shown once, give it to {args.name}): {secret}")
        print(f"entry for the tokens file (a JSON list): {json.dumps(entry)}")
        return 0
    if args.command == "place":
        return _place(args.server, args.request, as_json=args.output == "json")
    if args.command == "reserve":
        return _reserve(args)
    if args.command == "release":
        return _release(args.server, args.id, as_json=args.output == "json")
    if args.command == "renew":
        return _renew(args.server, args.id, args.ttl, as_json=args.output == "json")
    if args.command == "reservation":
        return _show_reservation(args.server, args.id, as_json=args.output == "json")
    if args.command in ("sites", "prices", "compare-sites"):
        return sites_cli.run(args)
    if args.command in elastic_cli.COMMANDS:
        return elastic_cli.run(args)
    import asyncio  # only from here on: the client commands above need no event loop

    if args.command == "serve":
        with _stopping_on_sigterm():
            _run_service(_serve(_settings(args)))
    elif args.command == "demo":
        with _stopping_on_sigterm(), _local_neo4j_if_asked(args):
            _run_service(_demo(_settings(args), args.profile))
    elif args.command == "load":
        from graphsvc.synthetic.clusters import build

        cluster = build(args.profile, cluster=args.cluster)
        asyncio.run(push_cluster(args.server, cluster))
    elif args.command == "bench":
        from graphsvc.bench.run import bench as run_bench

        report = asyncio.run(
            run_bench(
                args.cluster,
                args.trace,
                [p.strip() for p in args.policy.split(",")],
                args.jobs,
                [int(s) for s in args.seeds.split(",") if s.strip()],
                args.server,
            )
        )
        print(json.dumps(report, indent=1))
    elif args.command == "export":
        from urllib.parse import urlencode

        params = {**({"cluster": args.cluster} if args.cluster else {}), **({"host": args.host} if args.host else {})}
        status, text = _http(args.server, f"/v1/export/{args.format}?{urlencode(params)}", timeout=300)
        _check_status(args.server, status, text)
        print(text, end="")
    elif args.command == "export-schema":
        from graphsvc.api.graphql.schema import schema

        text = schema.as_str() + "\n"
        if args.out:
            args.out.write_text(text)
        else:
            print(text, end="")
    elif args.command == "migrate":
        asyncio.run(_migrate(_settings(args)))
    elif args.command == "reset-host":
        return asyncio.run(_reset_host(args.server, args.host))
    elif args.command == "remove-host":
        return asyncio.run(_remove_host(args.server, args.host))
    elif args.command == "drift":
        return drift_cli.run(args)  # 0 no drift, 1 drift, 2 could not check
    return 0


class _reaching:
    """Turns httpx's transport errors into one line naming the URL and the fix."""

    def __init__(self, server: str) -> None:
        self.server = server

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        import httpx

        where = f"the service at {self.server}"
        fix = "start it (`graphsvc serve` or `graphsvc demo`) or point --server or GRAPHSVC_URL at it"
        if isinstance(exc, httpx.ConnectError):
            raise CLIError(f"cannot reach {where} (connection refused or no such host): {fix}") from None
        if isinstance(exc, httpx.TimeoutException):
            raise CLIError(f"{where} did not answer in time: is it overloaded, or is that the right URL?") from None
        if isinstance(exc, (httpx.UnsupportedProtocol, httpx.InvalidURL)):
            raise CLIError(f"{self.server!r} is not a service URL: give one such as {DEFAULT_URL}") from None
        if isinstance(exc, httpx.TransportError):
            raise CLIError(f"talking to {where} failed ({type(exc).__name__}: {exc}): {fix}") from None


def _check_status(server: str, status: int, text: str) -> None:
    if status in (401, 403):
        raise CLIError(
            f"the service at {server} refused the request (HTTP {status}): "
            "set GRAPHSVC_TOKEN to a token with the needed role (`graphsvc token create`)"
        )
    if status != 200:
        raise CLIError(f"the service at {server} answered HTTP {status}: {text[:300]}")


def _http(
    server: str, path: str, body: dict[str, Any] | None = None, timeout: float = 60, method: str | None = None
) -> tuple[int, str]:
    """One request with the standard library (importing httpx alone costs a CLI call ~0.3 s);
    transport errors become one CLIError line naming the URL and the fix."""
    import urllib.error
    import urllib.request

    url = server.rstrip("/") + path
    headers = {"accept": "application/json", **_auth_headers()}
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers["content-type"] = "application/json"
    fix = "start it (`graphsvc serve` or `graphsvc demo`) or point --server or GRAPHSVC_URL at it"
    if not url.startswith(("http://", "https://")):
        raise CLIError(f"{server!r} is not a service URL: give one such as {DEFAULT_URL}")
    request = urllib.request.Request(url, data=data, headers=headers, method=method or ("POST" if data else "GET"))  # noqa: S310
    try:
        with urllib.request.urlopen(request, timeout=timeout) as resp:  # noqa: S310 (the operator's URL)
            return int(resp.status), resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(errors="replace")
    except TimeoutError:
        raise CLIError(f"the service at {server} did not answer in {timeout:.0f} s: is it overloaded?") from None
    except urllib.error.URLError as exc:
        raise CLIError(f"cannot reach the service at {server} ({exc.reason}): {fix}") from None


def _auth_headers() -> dict[str, str]:
    """Client commands authenticate with GRAPHSVC_TOKEN when it is set."""
    token = os.environ.get("GRAPHSVC_TOKEN")
    return {"authorization": f"Bearer {token}"} if token else {}


def _run_service(main: Coroutine[Any, Any, None]) -> None:
    """Run the service on uvloop where it is installed (its socket I/O costs the event loop
    less per request than asyncio's own loop), else on asyncio's. Uvicorn picks its loop only in
    `Server.run`, which `serve` does not use (it awaits `Server.serve` in its own loop)."""
    import asyncio

    try:
        import uvloop
    except ImportError:
        asyncio.run(main)
        return
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        runner.run(main)


def _http_protocol() -> type[asyncio.Protocol] | str:
    """One write per response where httptools is installed (graphsvc/api/http_protocol.py), else
    uvicorn's own choice."""
    try:
        from graphsvc.api.http_protocol import CoalescingHttpToolsProtocol
    except ImportError:  # pragma: no cover - uvicorn[standard] brings httptools
        return "auto"
    return CoalescingHttpToolsProtocol


# How long a stopping service waits for the requests in flight before it cancels them (uvicorn's
# default: for ever). The explorer's event streams are ended at once (graphsvc.ui.offline.end_streams);
# this bounds what else may hold a stop, such as a client that never sends the rest of its body.
GRACEFUL_SHUTDOWN_S = 15
# How long a second Ctrl-C still waits for the app's own shutdown (the embedded store stopped).
FORCED_SHUTDOWN_S = 60


def _server_class() -> type[uvicorn.Server]:
    """uvicorn's server, stopping cleanly with subscription streams open and on a second Ctrl-C.

    Why: uvicorn waited for every open response before it shut the app down, and an explorer tab's
    events stream never ends, so SIGTERM did not exit while one was open; a second Ctrl-C then
    skipped the app's shutdown altogether (its CancelledError tracebacks) and left the embedded
    FalkorDB running. Now the streams end first, and a forced exit still runs the app's shutdown
    once the requests in flight are cancelled."""
    import asyncio
    import socket

    import uvicorn

    from graphsvc.ui.offline import end_streams

    class Server(uvicorn.Server):
        async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
            end_streams(self.config.app)
            await super().shutdown(sockets)
            if not self.force_exit:
                return  # uvicorn ran the app's shutdown
            tasks = list(self.server_state.tasks)
            for task in tasks:
                task.cancel()
            if tasks:
                await asyncio.wait(tasks, timeout=FORCED_SHUTDOWN_S)
            try:
                await asyncio.wait_for(self.lifespan.shutdown(), FORCED_SHUTDOWN_S)
            except TimeoutError:
                log.error("the app did not shut down within %s s of a forced stop", FORCED_SHUTDOWN_S)

    return Server


def _server(settings: Settings) -> uvicorn.Server:
    import uvicorn

    from graphsvc.api.app import create_app

    if not settings.insecure_dev and settings.tokens_file is None and not settings.tokens:
        raise CLIError(
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
        http=_http_protocol(),
        # A websocket message is a GraphQL request as an HTTP body is: the same cap (uvicorn's
        # default, 16 MiB, took a 15 MiB query where HTTP refuses 4 MiB; a probe's case).
        ws_max_size=settings.max_body_bytes,
        ssl_certfile=str(settings.tls_certfile) if settings.tls_certfile else None,
        ssl_keyfile=str(settings.tls_keyfile) if settings.tls_keyfile else None,
        timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_S,
    )
    return _server_class()(config)


def local_url(settings: Settings) -> str:
    """The service's URL from this machine: a wildcard address as the loopback of its family
    (asyncio binds "::" to IPv6 only), an IPv6 address in brackets, https with TLS."""
    scheme = "https" if settings.tls_certfile else "http"
    host = {"0.0.0.0": "127.0.0.1", "::": "::1"}.get(settings.host, settings.host)  # noqa: S104 (naming, not binding)
    return f"{scheme}://{f'[{host}]' if ':' in host else host}:{settings.port}"


def ready_line(settings: Settings) -> str:
    """Where to go once the service is up: the explorer, GraphiQL (dev mode) and the API docs."""
    url = local_url(settings)
    graphiql = f"{url}/graphql" if settings.dev_mode else "off (dev mode only)"
    return f"ready at {url}: explorer {url}/ui/ · GraphiQL {graphiql} · API docs {url}/docs ({url}/redoc)"


async def _start(settings: Settings) -> tuple[uvicorn.Server, asyncio.Task[None]]:
    """Start uvicorn and wait until it listens; a start-up failure is one CLIError line. With a
    port file, the port goes into it once the service listens (an earlier run's file is removed
    first: a reader never sees a port this process does not hold)."""
    import asyncio

    from graphsvc import logs

    _forget_port_file(settings)
    server = _server(settings)

    async def serve() -> None:
        with contextlib.suppress(SystemExit):  # uvicorn exits on a failed start-up; the reason was logged
            await server.serve()

    task = asyncio.create_task(serve())
    while not server.started:
        if task.done():
            await task
            raise CLIError(logs.startup_error or "the service did not start; see the log above")
        await asyncio.sleep(0.05)
    try:
        port = _listening_port(server)
        if port is None:  # a signal came during start-up: uvicorn is shutting down already
            await task
            raise CLIError("the service stopped while it was starting")
        settings.port = port
        if settings.port_file is not None:
            _write_port_file(settings.port_file, port)
    except BaseException:
        # Whatever fails here (a port file in a missing folder): the server stops, and its
        # lifespan shutdown stops the embedded store, before the error goes on.
        server.should_exit = True
        await task
        raise
    return server, task


def _listening_port(server: uvicorn.Server) -> int | None:
    """The port uvicorn listens on (the kernel's choice where the settings said 0; its first
    socket's where the host names several addresses), None once it closed its sockets."""
    sockets = [sock for listener in server.servers for sock in listener.sockets]
    if not sockets:
        return None
    port: int = sockets[0].getsockname()[1]
    return port


def _forget_port_file(settings: Settings) -> None:
    """The port file goes with the service (and an earlier run's before it starts): a supervisor
    never reads the port of one that is not listening."""
    if settings.port_file is not None:
        settings.port_file.unlink(missing_ok=True)


def _write_port_file(path: Path, port: int) -> None:
    """Write the port whole or not at all (a reader polling for the file never sees half of it).
    Why a file: with --port 0 a supervisor or a test learns the port from the process that holds
    it; a port found free beforehand can be taken by another process before the service binds it."""
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        tmp.write_text(f"{port}\n")
        tmp.replace(path)
    except OSError as exc:
        raise CLIError(f"cannot write the port file {path}: {exc.strerror or exc}") from None


async def _serve(settings: Settings) -> None:
    _, task = await _start(settings)
    try:
        log.info(ready_line(settings))
        await task
    finally:
        _forget_port_file(settings)


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


def _demo_clusters(profile: str) -> list[SyntheticCluster]:
    from graphsvc.synthetic.clusters import Profile, build

    if profile == "multisite":  # on-prem + two cloud regions, with sites and example prices (docs/sites.md)
        from graphsvc.synthetic import multisite

        return multisite.clusters()
    return [build(Profile.parse(profile))]


@contextlib.contextmanager
def _demo_token(
    tokens: TokenStore, settings: Settings, name: str, role: str, hosts: list[str] | None = None
) -> Iterator[str | None]:
    """A token of the demo's own, in memory only (never printed), revoked on the way out;
    None where there is no authentication (insecure dev mode)."""
    if settings.insecure_dev:
        yield None
        return
    from graphsvc.security.auth import Role, new_token

    token, entry = new_token(name, Role(role), hosts)
    sha = tokens.add(entry)
    try:
        yield token
    finally:
        tokens.revoke(sha)


async def _demo(settings: Settings, profile: str) -> None:
    clusters = _demo_clusters(profile)
    server, task = await _start(settings)
    try:
        await _demo_on(settings, profile, clusters, server, task)
    finally:
        _forget_port_file(settings)


async def _demo_on(
    settings: Settings, profile: str, clusters: list[SyntheticCluster], server: uvicorn.Server, task: asyncio.Task[None]
) -> None:
    """The demo on its started server: load the clusters, say where it is, keep the hosts fresh."""
    import asyncio

    from fastapi import FastAPI

    url = local_url(settings)
    app = server.config.app
    assert isinstance(app, FastAPI)
    tokens = app.state.tokens
    try:
        with _demo_token(tokens, settings, "demo-loader", "operator") as loader:
            for cluster in clusters:
                await push_cluster(url, cluster, token=loader)
            if profile == "multisite":
                from graphsvc.synthetic import multisite

                await multisite.push_sites(url, loader)
        print(f"graphsvc demo: {ready_line(settings)}; Ctrl-C to stop", file=sys.stderr)
    except BaseException:
        server.should_exit = True
        await task
        raise
    hosts = [h for c in clusters for h in c.hosts]
    with _demo_token(tokens, settings, "demo-collector", "collector", [h.hostname for h in hosts]) as collector:
        every_s = settings.stale_after_s / 3
        refresher = asyncio.create_task(_keep_fresh(url, hosts, collector, every_s, lambda: server.should_exit))
        try:
            await task
        finally:
            refresher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await refresher


async def _keep_fresh(
    url: str, hosts: list[HostFacts], token: str | None, every_s: float, stopping: Callable[[], bool]
) -> None:
    """Send the demo hosts' facts again every `every_s`, with a new collected_at, as their
    collectors would. Why: the demo has no collectors, so after stale_after_s (5 min) every host
    was stale and nothing could be placed. Cheap: the service applies facts whose topology it
    already holds with one small statement."""
    import asyncio
    from datetime import UTC, datetime

    import httpx

    log.info("demo: refreshing the facts of its %d hosts every %.0f s, as collectors would", len(hosts), every_s)
    headers = {"authorization": f"Bearer {token}"} if token else {}
    notice = _BusyNotice()
    async with httpx.AsyncClient(base_url=url, timeout=120, headers=headers) as client:
        while True:
            await asyncio.sleep(every_s)
            fresh = [h.model_copy(update={"collected_at": datetime.now(UTC)}) for h in hosts]
            try:
                await _put_hosts(client, fresh, concurrency=2, notice=notice)
            except (CLIError, httpx.HTTPError) as exc:
                if stopping():
                    return  # the service is shutting down: nothing to keep fresh
                log.warning("demo: refreshing host facts failed (%s); trying again in %.0f s", exc, every_s)


PUT_ATTEMPTS = 3


async def _put_again_if_dropped(client: httpx.AsyncClient, path: str, body: str) -> httpx.Response:
    """PUT a JSON document; sent again (at most PUT_ATTEMPTS times) when the connection dropped
    before an answer came. Safe because a PUT of facts is idempotent: the same document twice
    leaves the graph as once. Why: a pooled keep-alive connection the server closes just as a
    request goes out on it (both sides' idle limit is 5 s) is a ReadError on a loaded machine."""
    import asyncio

    import httpx

    for attempt in range(1, PUT_ATTEMPTS + 1):
        try:
            return await client.put(path, content=body, headers={"content-type": "application/json"})
        except (httpx.ReadError, httpx.WriteError, httpx.RemoteProtocolError):
            if attempt == PUT_ATTEMPTS:
                raise
            await asyncio.sleep(0.2 * attempt)
    raise AssertionError("unreachable")


BUSY_STATUSES = frozenset({429, 503})
BUSY_ATTEMPTS = 6
BUSY_BACKOFF_S = 1.0  # doubled each time: 1 + 2 + 4 + 8 + 16 s at most between six attempts
BUSY_MAX_PAUSE_S = 30.0


class _BusyNotice:
    """Says once, on stderr, that the service is busy and PUTs are being sent again."""

    def __init__(self) -> None:
        self.said = False

    def say(self, resp: httpx.Response) -> None:
        if not self.said:
            self.said = True
            print(
                f"graphsvc: the service is busy (HTTP {resp.status_code}: {resp.text[:200]}); "
                f"retrying, up to {BUSY_ATTEMPTS} times a request",
                file=sys.stderr,
            )


async def _put_again_if_busy(client: httpx.AsyncClient, path: str, body: str, notice: _BusyNotice) -> httpx.Response:
    """PUT, sent again (at most BUSY_ATTEMPTS times, pausing longer each time) while the service
    answers 503 or 429. Why: on a busy 2-core machine a cold Neo4j's first writes ran past the
    service's 10 s query timeout (503 "timed out") and the demo gave up. Safe: a PUT of facts is
    idempotent. Any other status is returned at once: a 4xx is the request's fault, a 500 a bug."""
    import asyncio

    for attempt in range(1, BUSY_ATTEMPTS + 1):
        resp = await _put_again_if_dropped(client, path, body)
        if resp.status_code not in BUSY_STATUSES or attempt == BUSY_ATTEMPTS:
            return resp
        notice.say(resp)
        await asyncio.sleep(_busy_pause(resp, attempt))
    raise AssertionError("unreachable")


def _busy_pause(resp: httpx.Response, attempt: int) -> float:
    """The service's Retry-After (seconds) where it gives one, else a doubling backoff; capped."""
    after = resp.headers.get("retry-after", "").strip()
    pause = float(after) if after.isdigit() else BUSY_BACKOFF_S * 2 ** (attempt - 1)
    return min(pause, BUSY_MAX_PAUSE_S)


async def _put_hosts(
    client: httpx.AsyncClient,
    hosts: list[HostFacts],
    *,
    concurrency: int,
    notice: _BusyNotice,
    progress: Callable[[HostFacts], None] | None = None,
) -> None:
    """PUT every host's facts, `concurrency` at a time; a refusal is one CLIError line."""
    import asyncio

    pending = iter(hosts)  # shared by the workers: each takes the next host

    async def worker() -> None:
        for host in pending:
            path = f"/v1/hosts/{host.hostname}/facts"
            resp = await _put_again_if_busy(client, path, host.model_dump_json(), notice)
            if resp.status_code != 200:
                raise CLIError(f"host {host.hostname}: HTTP {resp.status_code}: {resp.text[:500]}")
            if progress is not None:
                progress(host)

    await asyncio.gather(*(worker() for _ in range(concurrency)))


async def push_cluster(url: str, cluster: SyntheticCluster, *, concurrency: int = 8, token: str | None = None) -> None:
    """Send every host's facts, then the fabric, through the public ingest API, with progress."""
    import httpx

    total = len(cluster.hosts)
    print(
        f"loading {total} hosts / {cluster.gpu_count} GPUs "
        + ", ".join(f"{n} {m}" for m, n in sorted(cluster.gpus_by_model().items())),
        file=sys.stderr,
    )
    started = time.monotonic()
    done = gpus = 0
    last = 0.0

    def progress(host: HostFacts) -> None:
        nonlocal done, gpus, last
        done += 1
        gpus += len(host.gpus)
        now = time.monotonic()
        if now - last > 1.0 or done == total:
            last = now
            print(f"  hosts {done}/{total}  GPUs {gpus}  {now - started:.1f}s", file=sys.stderr)

    notice = _BusyNotice()
    with _reaching(url):
        headers = {"authorization": f"Bearer {token}"} if token else _auth_headers()
        async with httpx.AsyncClient(base_url=url, timeout=120, headers=headers) as client:
            await _put_hosts(client, cluster.hosts, concurrency=concurrency, notice=notice, progress=progress)
            fabric_json = cluster.fabric().model_dump_json()
            resp = await _put_again_if_busy(client, "/v1/fabric", fabric_json, notice)
    if resp.status_code != 200:
        raise CLIError(f"fabric: HTTP {resp.status_code}: {resp.text[:500]}")
    fabric = resp.json()
    print(
        f"  fabric: {fabric['switches']} switches, {fabric['links']} links; done in {time.monotonic() - started:.1f}s",
        file=sys.stderr,
    )


PLACE_QUERY = """
query Place($text: String!) {
  placementText(text: $text) {
    request searchedUnits elapsedMs
    candidates { rank score bottleneckGbps maxIbHops ibHopsKnown asOf reason
                 fragmentation { largestFreeBlockBefore largestFreeBlockAfter }
                 hosts { name } gpus { uuid index host { name } } }
    migCandidates { rank scope reason slices { uuid profile gpuIndex host } }
    infeasible { constraint message nearestFeasible }
  }
}
"""


def _graphql(server: str, query: str, variables: dict[str, object]) -> dict[str, Any]:
    """POST a GraphQL query; transport, auth and query errors become one CLIError line."""
    status, text = _http(server, "/graphql", {"query": query, "variables": variables})
    if status in (401, 403):
        _check_status(server, status, text)
    try:
        body = json.loads(text)
    except ValueError:
        raise CLIError(f"{server} answered HTTP {status} without JSON: is that URL a graphsvc service?") from None
    errors = body.get("errors") if isinstance(body, dict) else None
    if errors:
        raise CLIError(f"the service at {server} rejected the query: {errors[0].get('message')}")
    _check_status(server, status, text)
    data: dict[str, Any] = body["data"]
    return data


def _gpu_list(gpus: list[dict[str, Any]]) -> str:
    """host:0-7 per host, as people write GPU sets."""
    by_host: dict[str, list[int]] = {}
    for g in gpus:
        by_host.setdefault(g["host"]["name"], []).append(int(g["index"]))
    parts = []
    for host, indices in by_host.items():
        runs: list[list[int]] = []
        for i in sorted(indices):
            if runs and i == runs[-1][1] + 1:
                runs[-1][1] = i
            else:
                runs.append([i, i])
        parts.append(host + ":" + ",".join(f"{a}" if a == b else f"{a}-{b}" for a, b in runs))
    return " ".join(parts)


SHAPED_QUERY = """
query Shaped($text: String!) {
  shapedPlacement(text: $text) {
    request jobTier jobUnit railAlignedShare escalated reason hostsRead elapsedMs
    groups { ppRank dpRank tier hosts }
    ranks { rank tpRank ppRank dpRank host gpuIndex gpuUuid rail }
    bandwidth { level bottleneckGbps note }
    launch { hostfile rankfile contiguous ncclEnv hosts { host nodeRank cudaVisibleDevices ranks } }
    infeasible { constraint message nearestFeasible }
  }
}
"""


def _place_shaped(server: str, text: str, *, as_json: bool) -> int:
    """A job given as TP/PP/DP groups: the groups, the rank map and the launch files."""
    result = (_graphql(server, SHAPED_QUERY, {"text": text}))["shapedPlacement"]
    bad = [r for r in result["infeasible"] if r["constraint"] == "text"]
    if bad:
        raise CLIError(f"text: {bad[0]['message']}")
    if as_json:
        print(json.dumps(result, indent=2))
        return 0 if result["ranks"] else 2
    print(f"{result['request']}  ({result['hostsRead']} hosts read, {result['elapsedMs']:.1f} ms)")
    for r in result["infeasible"]:
        nearest = f"  nearest feasible: {r['nearestFeasible']}" if r["nearestFeasible"] else ""
        print(f"infeasible [{r['constraint']}]: {r['message']}{nearest}")
    if not result["ranks"]:
        return 2
    print(result["reason"])
    for b in result["bandwidth"]:
        gbps = "-" if b["bottleneckGbps"] is None else f"{b['bottleneckGbps']:g} GB/s"
        print(f"  {b['level']}: {gbps}  ({b['note']})")
    print("rank map (rank: host gpu  tp/pp/dp):")
    for r in result["ranks"]:
        print(f"  {r['rank']:>5}: {r['host']} {r['gpuIndex']}  {r['tpRank']}/{r['ppRank']}/{r['dpRank']}")
    print("per host (node rank, CUDA_VISIBLE_DEVICES, ranks):")
    for h in result["launch"]["hosts"]:
        print(f"  {h['nodeRank']:>4} {h['host']} CUDA_VISIBLE_DEVICES={h['cudaVisibleDevices']} ranks={h['ranks']}")
    print("NCCL: " + " ".join(result["launch"]["ncclEnv"]))
    return 0


def _place(server: str, text: str, *, as_json: bool) -> int:
    # The service parses the text (importing the parser here would cost the CLI ~0.25 s).
    if is_shaped(text):
        return _place_shaped(server, text, as_json=as_json)
    result = (_graphql(server, PLACE_QUERY, {"text": text}))["placementText"]
    bad = [r for r in result["infeasible"] if r["constraint"] == "text"]
    if bad:
        raise CLIError(f"text: {bad[0]['message']}")
    found = result["candidates"] or result["migCandidates"]
    if as_json:
        print(json.dumps(result, indent=2))
        return 0 if found else 2
    print(f"{result['request']}  ({result['searchedUnits']} units read, {result['elapsedMs']:.1f} ms)")
    for c in result["candidates"]:
        hops = c["maxIbHops"] if c["ibHopsKnown"] else f"{c['maxIbHops']} (no IB path known between some hosts)"
        print(f"#{c['rank']} score {c['score']}  bottleneck {c['bottleneckGbps']} GB/s  hops {hops}")
        print(f"   GPUs: {_gpu_list(c['gpus'])}")
        print(f"   {c['reason']}")
    for c in result["migCandidates"]:  # a MIG request (2x 3g.40gb): slices, never whole GPUs
        print(f"#{c['rank']} MIG slices on one {c['scope']}: {c['reason']}")
        print(f"   slices: {_slice_list(c['slices'])}")
    for r in result["infeasible"]:
        nearest = f"  nearest feasible: {r['nearestFeasible']}" if r["nearestFeasible"] else ""
        print(f"infeasible [{r['constraint']}]: {r['message']}{nearest}")
    return 0 if found else 2


def _slice_list(slices: list[dict[str, Any]]) -> str:
    """MIG slices as 'host/gpu:profile uuid', the uuid being what CUDA_VISIBLE_DEVICES takes."""
    return ", ".join(f"{s['host']}/{s['gpuIndex']}:{s['profile']} {s['uuid']}" for s in slices)


def _reserve(args: argparse.Namespace) -> int:
    from graphsvc.client import RESERVE_MUTATION, request_input

    request = request_input(args.request)  # the parser's words on bad input, before calling the service
    variables: dict[str, object] = {
        "input": {
            "holder": args.holder,
            "request": request,
            "ttlSeconds": args.ttl,
            "idempotencyKey": args.key,
            "priority": args.priority,
            "preemptible": args.preemptible,
            "allowPreemption": args.allow_preemption,
        }
    }
    out = (_graphql(args.server, RESERVE_MUTATION, variables))["reserve"]
    kind = out["__typename"]
    if args.output == "json":
        print(json.dumps(out, indent=2))
        return 0 if kind == "Reservation" else 2
    if kind == "Reservation":
        print(f"{out['id']}  holder {out['holder']}  expires {human_time(out['expiresAt'])}")
        if out.get("migSlices"):
            print(f"   MIG slices: {_slice_list(out['migSlices'])}")
        else:
            print(f"   GPUs: {_gpu_list(out['gpus'])}")
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


def _release(server: str, reservation_id: str, *, as_json: bool = False) -> int:
    query = (
        "mutation($id: String!) { release(id: $id) { __typename "
        "... on Reservation { id state holder } ... on NotFound { message } } }"
    )
    out = (_graphql(server, query, {"id": reservation_id}))["release"]
    if as_json:
        print(json.dumps(out, indent=2))
    elif out["__typename"] == "NotFound":
        print(out["message"])
    else:
        print(f"{out['id']}: {out['state']}")
    return 2 if out["__typename"] == "NotFound" else 0


def _renew(server: str, reservation_id: str, ttl_s: int | None, *, as_json: bool = False) -> int:
    query = (
        "mutation($id: String!, $ttl: Int) { renew(id: $id, ttlSeconds: $ttl) { __typename "
        "... on Reservation { id expiresAt } ... on Error { message } } }"
    )
    out = (_graphql(server, query, {"id": reservation_id, "ttl": ttl_s}))["renew"]
    if as_json:
        print(json.dumps(out, indent=2))
    elif out["__typename"] == "Reservation":
        print(f"{out['id']}: expires {human_time(out['expiresAt'])}")
    else:
        print(f"{out['__typename']}: {out['message']}")
    return 0 if out["__typename"] == "Reservation" else 2


RESERVATION_QUERY = """query($id: String!) { reservation(id: $id) {
  id holder state createdAt expiresAt endedAt priority preemptible labels request preemptBy preemptAt graceEndsAt
  gpus { uuid index model state health temperatureC host { name } }
  migSlices { uuid profile host gpuIndex held }
} }"""


def _show_reservation(server: str, reservation_id: str, *, as_json: bool = False) -> int:
    """What a job's owner asks when it wonders whether it still holds its GPUs: the state as
    readers see it (expired from the moment the lease ran out) and each GPU's health now."""
    out = (_graphql(server, RESERVATION_QUERY, {"id": reservation_id}))["reservation"]
    if as_json:
        print(json.dumps(out, indent=2))
        return 0 if out is not None else 2
    if out is None:
        print(f"no reservation {reservation_id!r}")
        return 2
    lease = f"expires {human_time(out['expiresAt'])}" if out["state"] == "active" else ""
    ended = f"ended {human_time(out['endedAt'])}" if out["endedAt"] is not None else ""
    print(f"{out['id']}  {out['state']}  holder {out['holder']}  {lease or ended}".rstrip())
    if out["request"]:
        print(f"   request: {out['request']}")
    if out["preemptBy"]:
        print(f"   preempted by {out['preemptBy']} at {human_time(out['preemptAt'])}: checkpoint and release before")
    if out["migSlices"]:
        print(f"   MIG slices: {_slice_list(out['migSlices'])}")
    for g in out["gpus"]:
        temperature = f"  {g['temperatureC']:g} C" if g["temperatureC"] is not None else ""
        held = "" if g["state"] is not None else "  (not held)"  # the reservation ended: the GPU is not its
        print(f"   {g['host']['name']}/{g['index']} {g['model']} {g['uuid']}  {g['health'] or 'health unknown'}"
              f"{temperature}{held}")  # fmt: skip
    return 0


async def _reset_host(server: str, host: str) -> int:
    import asyncio

    query = (
        "mutation($host: String!) { resetHostFreshness(host: $host) { __typename "
        "... on HostFreshnessReset { host previousCollectedAt } ... on NotFound { message } } }"
    )
    out = (await asyncio.to_thread(_graphql, server, query, {"host": host}))["resetHostFreshness"]
    if out["__typename"] == "NotFound":
        print(out["message"])
        return 2
    print(f"{out['host']}: collection times reset (collected_at was {out['previousCollectedAt']})")
    return 0


async def _remove_host(server: str, host: str) -> int:
    """0 removed, 2 no such host, 1 refused: live reservations hold its GPUs (each named)."""
    import asyncio

    query = (
        "mutation($host: String!) { removeHost(name: $host) { __typename "
        "... on HostRemoved { host gpusRemoved nicsRemoved cablesRemoved nvlinkDomainsRemoved } "
        "... on Conflict { holders { gpuUuid reservation holder } } ... on Error { message } } }"
    )
    out = (await asyncio.to_thread(_graphql, server, query, {"host": host}))["removeHost"]
    if out["__typename"] == "NotFound":
        print(out["message"])
        return 2
    if out["__typename"] != "HostRemoved":
        print(out["message"])
        for h in out.get("holders", []):
            print(f"   {h['reservation']}  holder {h['holder']}  GPU {h['gpuUuid']}")
        return 1
    print(
        f"{out['host']}: removed ({out['gpusRemoved']} GPUs, {out['nicsRemoved']} NICs, {out['cablesRemoved']} "
        f"cables, {out['nvlinkDomainsRemoved']} NVLink domains)"
    )
    return 0


async def _migrate(settings: Settings) -> None:
    from graphsvc.store.factory import open_store
    from graphsvc.store.migrate import stored_version

    async with open_store(settings) as gw:
        print(f"graph version {await stored_version(gw)} ({gw.kind})", file=sys.stderr)


if __name__ == "__main__":
    raise SystemExit(main())
